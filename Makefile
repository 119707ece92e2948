# Kingfisher — the whole developer workflow. See README.md.
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
CMAKE := cmake -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DCMAKE_CXX_COMPILER_LAUNCHER=ccache $(CMAKE_FLAGS)

.PHONY: deps configure build test test-asan test-tsan run bench bench-peers fuzz format clean

deps:
	@./scripts/deps.sh

$(BUILD_DIR)/build.ninja:
	$(CMAKE) -S . -B $(BUILD_DIR)

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) --label-exclude slow-asan

# Sanitizer builds use clang-14, which also checks the thread-safety annotations
# (-Wthread-safety -Werror), at -O1 (see CMakeLists.txt).
CLANG := -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14

# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer; lsan.supp lists the leaks
# that are not ours.
test-asan: deps
	$(CMAKE) $(CLANG) -S . -B build-asan -DKF_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
	cmake --build build-asan -j $(JOBS)
	LSAN_OPTIONS="suppressions=$(CURDIR)/lsan.supp print_suppressions=0 $(LSAN_OPTIONS)" \
	  ctest --test-dir build-asan --output-on-failure -j $(JOBS)

# The same suite under ThreadSanitizer; tsan.supp lists the reports that are not ours. The suites
# labelled tsan-blind serve through gRPC's completion queue: Debian's gRPC is not built with
# TSan, so the hand-offs between its threads are invisible and every access of a reactor is
# reported.
test-tsan: deps
	$(CMAKE) $(CLANG) -S . -B build-tsan -DKF_TSAN=ON -DCMAKE_BUILD_TYPE=Debug
	cmake --build build-tsan -j $(JOBS)
	TSAN_OPTIONS="suppressions=$(CURDIR)/tsan.supp ignore_noninstrumented_modules=1 second_deadlock_stack=1 $(TSAN_OPTIONS)" \
	  ctest --test-dir build-tsan --output-on-failure -j $(JOBS) --label-exclude tsan-blind

run: build
	$(BUILD_DIR)/bin/kingfisher run standalone $(ARGS)

bench: build
	./bench/run.sh $(BUILD_DIR)

# Kingfisher next to Redis Streams, etcd and NATS JetStream (installed from Debian if missing).
bench-peers: build
	./bench/peers.sh $(BUILD_DIR)

# libFuzzer targets (clang-14): make fuzz builds them into build-fuzz/bin.
fuzz: deps
	cmake -G Ninja -S . -B build-fuzz -DKF_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14
	cmake --build build-fuzz -j $(JOBS) --target fuzz

format:
	git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR) build-asan build-tsan build-fuzz
