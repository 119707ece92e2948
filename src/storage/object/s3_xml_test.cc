// The strict S3 XML parsing: what RGW/AWS send parses, and anything off is INTERNAL.
#include "storage/object/s3_xml.h"

#include <vector>

#include "gtest/gtest.h"

namespace kf::object {
namespace {

constexpr char kPage[] = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>p/</Prefix>
<KeyCount>2</KeyCount><MaxKeys>2</MaxKeys><IsTruncated>true</IsTruncated>
<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
<Contents><Key>p/a&amp;b</Key><LastModified>2024-01-01T00:00:00.000Z</LastModified>
<ETag>&quot;9e107d9d372bb6826bd81d3542a419d6&quot;</ETag><Size>43</Size>
<StorageClass>STANDARD</StorageClass><Owner><ID>kf</ID><DisplayName>kf</DisplayName></Owner></Contents>
<Contents><Key>p/c&#x41;&#66;</Key><Size>0</Size></Contents>
</ListBucketResult>)";

TEST(S3XmlTest, ParsesAListPage) {
  auto page = ParseListObjectsV2(kPage);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->objects.size(), 2u);
  EXPECT_EQ(page->objects[0].key, "p/a&b");
  EXPECT_EQ(page->objects[0].size, 43u);
  EXPECT_EQ(page->objects[0].etag, "9e107d9d372bb6826bd81d3542a419d6");
  EXPECT_EQ(page->objects[1].key, "p/cAB");
  EXPECT_EQ(page->objects[1].size, 0u);
  EXPECT_TRUE(page->truncated);
  EXPECT_EQ(page->next_continuation_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
}

TEST(S3XmlTest, ParsesAnEmptyLastPage) {
  auto page = ParseListObjectsV2(
      "<ListBucketResult><Name>b</Name><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated>"
      "</ListBucketResult>");
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_TRUE(page->objects.empty());
  EXPECT_FALSE(page->truncated);
}

TEST(S3XmlTest, RejectsWhatS3DoesNotSend) {
  const std::string ok_tail = "<IsTruncated>false</IsTruncated></ListBucketResult>";
  for (const std::string& bad : std::vector<std::string>{
           std::string(""),
           std::string("<ListBucketResult>"),                               // unterminated
           std::string("<Other><IsTruncated>false</IsTruncated></Other>"),  // wrong root
           std::string("<ListBucketResult></ListBucketResult>"),            // no IsTruncated
           "<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>",
           "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",  // no token
           "<ListBucketResult><Contents><Size>1</Size></Contents>" + ok_tail,       // no Key
           "<ListBucketResult><Contents><Key>a</Key></Contents>" + ok_tail,         // no Size
           "<ListBucketResult><Contents><Key>a</Key><Size>-1</Size></Contents>" + ok_tail,
           "<ListBucketResult><Contents><Key>a</Key><Size>1x</Size></Contents>" + ok_tail,
           "<ListBucketResult><Contents><Key>a</Key><Key>b</Key><Size>1</Size></Contents>" +
               ok_tail,
           "<ListBucketResult><Contents><Key>b</Key><Size>1</Size></Contents>"
           "<Contents><Key>a</Key><Size>1</Size></Contents>" +
               ok_tail,  // out of order
           "<ListBucketResult><!-- hi -->" + ok_tail,
           "<ListBucketResult><![CDATA[x]]>" + ok_tail,
           "<!DOCTYPE x><ListBucketResult>" + ok_tail,
           "<ListBucketResult><Key>&bogus;</Key>" + ok_tail,
           "<ListBucketResult><Key>&#0;</Key>" + ok_tail,
           "<ListBucketResult><Key>&#xD800;</Key>" + ok_tail,
           "<ListBucketResult><A></B>" + ok_tail,
           "<ListBucketResult>" + ok_tail + "<extra/>",
           "<ListBucketResult a=b>" + ok_tail,
       }) {
    auto page = ParseListObjectsV2(bad);
    EXPECT_TRUE(absl::IsInternal(page.status())) << bad << " -> " << page.status();
  }
}

TEST(S3XmlTest, RejectsDeepNesting) {
  std::string xml = "<ListBucketResult>";
  for (int i = 0; i < 100; ++i) xml += "<a>";
  EXPECT_TRUE(absl::IsInternal(ParseListObjectsV2(xml).status()));
}

TEST(S3XmlTest, ParsesAnErrorBody) {
  auto e = ParseS3Error(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>PreconditionFailed</Code>"
      "<Message></Message><BucketName>b</BucketName><RequestId>tx0</RequestId></Error>");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->code, "PreconditionFailed");
  EXPECT_TRUE(absl::IsInternal(ParseS3Error("<Error><Message>x</Message></Error>").status()));
}

}  // namespace
}  // namespace kf::object
