// SPDX-License-Identifier: MIT
// operator new that throws: std::bad_alloc unwinds through the preload
// interposer's hook, and what the thread allocates after the catch is
// recorded as before (the hook restored its nesting depth on the way out).
// Exits 0 when every new threw as it should.
#include <cstdlib>
#include <new>

#include "report.h"

// reporting the address of a block after delete is the point here
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif

static int throws(std::size_t size, int array)
{
	try {
		void *p = array ? ::operator new[](size) :
				  ::operator new(size, std::align_val_t(64));

		report("Malloc", p, size, nullptr); // not reached
		return 0;
	} catch (const std::bad_alloc &) {
		report("Nothing", nullptr, size, nullptr);
		return 1;
	}
}

int main()
{
	const std::size_t huge = std::size_t(1) << 62;
	int ok = 0, i;

	for (i = 0; i < 3; i++) {
		void *p;

		ok += throws(huge + 2 * i, 1);
		p = std::malloc(30001 + i);
		report("Malloc", p, 30001 + i, nullptr);
		std::free(p);
		report("Free", p, 0, nullptr);

		ok += throws(huge + 2 * i + 1, 0);
		p = ::operator new(30011 + i);
		report("Malloc", p, 30011 + i, nullptr);
		::operator delete(p);
		report("Free", p, 0, nullptr);
	}
	return ok == 6 ? 0 : 1;
}
