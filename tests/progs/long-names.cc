// SPDX-License-Identifier: MIT
//
// Two allocating functions whose names (demangled, as the report shows
// them) are the same for their first 140 bytes: one template, two
// instantiations whose argument differs only in its last word, the way
// C++ names do. tests/mkrec.py finds them in this file's symbol table to
// put them in a recording's stacks (tests/test-report.sh); running the
// program allocates once in each, which a live recording names by them.
#include <cstddef>
#include <cstdlib>

namespace memtrack_test {
template <typename T>
struct an_allocation_site_whose_template_argument_list_is_long_enough_to_pass_any_fixed_buffer {
};
struct first_instantiation {};
struct second_instantiation {};

// each on one line: every address of the function has the line marked.
// Not a tail call: at -O2 'return std::malloc(n)' became a jump to malloc,
// which leaves no frame of make<> in a live recording's stacks (the site
// read main's, tests/test-report.sh).
template <typename T> __attribute__((noinline)) void *make(std::size_t n) { void *p = std::malloc(n); __asm__ volatile("" : : "r"(p) : "memory"); return p; } // @make
} // namespace memtrack_test

int main()
{
	using namespace memtrack_test;
	void *a = make<an_allocation_site_whose_template_argument_list_is_long_enough_to_pass_any_fixed_buffer<
		first_instantiation> >(100);
	void *b = make<an_allocation_site_whose_template_argument_list_is_long_enough_to_pass_any_fixed_buffer<
		second_instantiation> >(200);

	std::free(a);
	std::free(b);
	return 0;
}
