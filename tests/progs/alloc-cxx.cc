// SPDX-License-Identifier: MIT
// Every operator new / delete, each reported once although they call
// malloc / free inside. Aligned new is a Malloc, as the reference (the
// CodSpeed runner's memtrack) writes it.
#include <cstdlib>
#include <new>

#include "report.h"

// reporting the address of a block after delete is the point here
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif

int main()
{
	void *p;
	const std::align_val_t al = std::align_val_t(64);

	p = ::operator new(20001);
	report("Malloc", p, 20001, nullptr);
	::operator delete(p);
	report("Free", p, 0, nullptr);

	p = ::operator new[](20002);
	report("Malloc", p, 20002, nullptr);
	::operator delete[](p);
	report("Free", p, 0, nullptr);

	p = ::operator new(20003, std::nothrow);
	report("Malloc", p, 20003, nullptr);
	::operator delete(p, std::nothrow);
	report("Free", p, 0, nullptr);

	p = ::operator new[](20004, std::nothrow);
	report("Malloc", p, 20004, nullptr);
	::operator delete[](p, std::nothrow);
	report("Free", p, 0, nullptr);

	p = ::operator new(20005, al);
	report("Malloc", p, 20005, nullptr);
	::operator delete(p, al);
	report("Free", p, 0, nullptr);

	p = ::operator new[](20006, al);
	report("Malloc", p, 20006, nullptr);
	::operator delete[](p, al);
	report("Free", p, 0, nullptr);

	p = ::operator new(20007, al, std::nothrow);
	report("Malloc", p, 20007, nullptr);
	::operator delete(p, al, std::nothrow);
	report("Free", p, 0, nullptr);

	p = ::operator new[](20008, al, std::nothrow);
	report("Malloc", p, 20008, nullptr);
	::operator delete[](p, al, std::nothrow);
	report("Free", p, 0, nullptr);

	p = ::operator new(20009);
	report("Malloc", p, 20009, nullptr);
	::operator delete(p, 20009);
	report("Free", p, 0, nullptr);

	p = ::operator new[](20010);
	report("Malloc", p, 20010, nullptr);
	::operator delete[](p, 20010);
	report("Free", p, 0, nullptr);

	p = ::operator new(20011, al);
	report("Malloc", p, 20011, nullptr);
	::operator delete(p, 20011, al);
	report("Free", p, 0, nullptr);

	p = ::operator new[](20012, al);
	report("Malloc", p, 20012, nullptr);
	::operator delete[](p, 20012, al);
	report("Free", p, 0, nullptr);

	// a failing nothrow new: no event
	p = ::operator new(std::size_t(1) << 62, std::nothrow);
	report("Nothing", nullptr, std::size_t(1) << 62, nullptr);

	// malloc from C++ code is still malloc
	p = std::malloc(20013);
	report("Malloc", p, 20013, nullptr);
	std::free(p);
	report("Free", p, 0, nullptr);
	return 0;
}
