// SPDX-License-Identifier: MIT
// tests/progs/stack-cxx.cc - an allocation in a C++ member function, for
// the stacks test: main -> ns::Widget::make(int) -> operator new(4321).
#include <cstdio>

namespace ns {
struct Widget {
	char data[4321];
	static Widget *make(int n);
};

__attribute__((noinline)) Widget *Widget::make(int n)
{
	Widget *w = new Widget;

	w->data[0] = (char)n;
	return w;
}
} // namespace ns

int main()
{
	ns::Widget *w = ns::Widget::make(1);

	std::printf("done %d\n", w->data[0]);
	delete w;
	return 0;
}
