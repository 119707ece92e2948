// libkingfisher.so is kf_client linked whole (src/client/CMakeLists.txt); a shared library
// needs a source of its own, and this is it.
