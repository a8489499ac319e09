// SPDX-License-Identifier: MIT
// tests/progs/sample-new.cc - for tests/test-sample.sh: 1000000 blocks
// of 16 B, each freed at once. With "new", from C++'s operators (new,
// new[], nothrow and aligned new in turn), which call malloc or
// aligned_alloc inside; else from malloc. At one seed both must be
// sampled alike: the operator's inner call is not the program's.
#include <cstdlib>
#include <cstring>
#include <new>

static void *volatile sink;

int main(int argc, char **argv)
{
	const std::align_val_t al = std::align_val_t(64);
	const bool cxx = argc > 1 && !std::strcmp(argv[1], "new");

	for (int i = 0; i < 1000000; i++) {
		if (!cxx) {
			sink = std::malloc(16);
			std::free(sink);
			continue;
		}
		switch (i % 4) {
		case 0:
			sink = ::operator new(16);
			::operator delete(sink);
			break;
		case 1:
			sink = ::operator new[](16);
			::operator delete[](sink);
			break;
		case 2:
			sink = ::operator new(16, std::nothrow);
			::operator delete(sink, std::nothrow);
			break;
		default:
			sink = ::operator new(16, al);
			::operator delete(sink, al);
			break;
		}
	}
	return 0;
}
