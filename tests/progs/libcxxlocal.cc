// SPDX-License-Identifier: MIT
// A C++ library that alloc-dlopen-cxx opens with RTLD_LOCAL: libstdc++
// comes with it, in its own scope, which the global scope (where the
// preload interposer's operator new is) does not search. Its operator
// new[] tail-calls operator new; one of them throws std::bad_alloc.
#include <cstddef>
#include <new>

#include "report.h"

extern "C" int cxx_work(void);

extern "C" int cxx_work(void)
{
	const std::size_t huge = std::size_t(1) << 62;
	int threw = 0;
	void *p;

	p = ::operator new(50001);
	report("Malloc", p, 50001, nullptr);
	::operator delete(p);
	report("Free", p, 0, nullptr);

	p = ::operator new[](50002);
	report("Malloc", p, 50002, nullptr);
	::operator delete[](p);
	report("Free", p, 0, nullptr);

	try {
		p = ::operator new[](huge);
		report("Malloc", p, huge, nullptr); // not reached
	} catch (const std::bad_alloc &) {
		report("Nothing", nullptr, huge, nullptr);
		threw = 1;
	}

	p = ::operator new(50003);
	report("Malloc", p, 50003, nullptr);
	::operator delete(p, std::size_t(50003));
	report("Free", p, 0, nullptr);
	return threw ? 0 : 1;
}
