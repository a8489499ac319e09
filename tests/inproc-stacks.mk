# tests/inproc-stacks: the preload interposer's stack machinery
# (plugins/preload/interposer/stack-*): unwinding code built without frame
# pointers, the stack table, the mappings. Needs neither root nor BPF.
#
# The stk- programs are built -O2 -fomit-frame-pointer on purpose: their
# stacks must come whole from .eh_frame. User CFLAGS come after ours (an
# -O0 there keeps the chain and the point of the test).
STK_PROG_CPPFLAGS = $(PRELOAD_INTERPOSER_CPPFLAGS) -I$(srcdir)/tests/progs
STK_PROG_CFLAGS = $(WARN_CFLAGS) $(PTHREAD_CFLAGS) -O2 -fomit-frame-pointer \
	-fno-builtin
STK_PROG_LIBS = plugins/preload/libmtpl-stacks.la $(PTHREAD_LIBS)
EXTRA_DIST += tests/progs/stk-hook.h tests/progs/chain.h

check_PROGRAMS += tests/progs/stk-chain tests/progs/stk-chain-nopie \
	tests/progs/stk-chain-cxx tests/progs/stk-bench
# PIE (Debian's default); -export-dynamic so that dladdr names the chain
tests_progs_stk_chain_SOURCES = tests/progs/stk-chain.c
tests_progs_stk_chain_CPPFLAGS = $(STK_PROG_CPPFLAGS)
tests_progs_stk_chain_CFLAGS = $(STK_PROG_CFLAGS)
tests_progs_stk_chain_LDFLAGS = -export-dynamic
tests_progs_stk_chain_LDADD = $(STK_PROG_LIBS)
# the same, at a fixed address
tests_progs_stk_chain_nopie_SOURCES = tests/progs/stk-chain.c
tests_progs_stk_chain_nopie_CPPFLAGS = $(STK_PROG_CPPFLAGS)
tests_progs_stk_chain_nopie_CFLAGS = $(STK_PROG_CFLAGS) -fno-PIE
tests_progs_stk_chain_nopie_LDFLAGS = -export-dynamic -Wc,-no-pie
tests_progs_stk_chain_nopie_LDADD = $(STK_PROG_LIBS)
# through libstdc++'s operator new
tests_progs_stk_chain_cxx_SOURCES = tests/progs/stk-chain-cxx.cc
tests_progs_stk_chain_cxx_CPPFLAGS = $(STK_PROG_CPPFLAGS)
tests_progs_stk_chain_cxx_CXXFLAGS = -Wall $(PTHREAD_CFLAGS) -O2 \
	-fomit-frame-pointer
tests_progs_stk_chain_cxx_LDFLAGS = -export-dynamic
tests_progs_stk_chain_cxx_LDADD = $(STK_PROG_LIBS)
# cost per capture: tests/progs/stk-bench (not a test; see its header)
tests_progs_stk_bench_SOURCES = tests/progs/stk-bench.c
tests_progs_stk_bench_CPPFLAGS = $(STK_PROG_CPPFLAGS) $(LIBUNWIND_CFLAGS)
tests_progs_stk_bench_CFLAGS = $(STK_PROG_CFLAGS)
tests_progs_stk_bench_LDADD = $(STK_PROG_LIBS) $(LIBUNWIND_LIBS)

# the library the mappings test dlopens: tests/progs/.libs/stk-dso.so
check_LTLIBRARIES += tests/progs/stk-dso.la
tests_progs_stk_dso_la_SOURCES = tests/progs/stk-dso.c
tests_progs_stk_dso_la_CFLAGS = $(STK_PROG_CFLAGS)
tests_progs_stk_dso_la_LDFLAGS = -module -avoid-version -shared \
	-rpath /nowhere

# looks an address up as libunwind does, bound lazily:
# tests/progs/.libs/lw-lookup.so
check_LTLIBRARIES += tests/progs/lw-lookup.la
tests_progs_lw_lookup_la_SOURCES = tests/progs/lw-lookup.c
tests_progs_lw_lookup_la_CFLAGS = $(WARN_CFLAGS)
tests_progs_lw_lookup_la_LDFLAGS = -module -avoid-version -shared \
	-rpath /nowhere -Wl,-z,lazy

if HAVE_CHECK
check_PROGRAMS += tests/test-inproc-stacks
TESTS += tests/test-inproc-stacks
tests_test_inproc_stacks_SOURCES = tests/test-inproc-stacks.c
tests_test_inproc_stacks_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/report
tests_test_inproc_stacks_CFLAGS = $(TEST_CFLAGS) $(LIBELF_CFLAGS)
tests_test_inproc_stacks_LDADD = plugins/preload/libmtpl-stacks.la \
	report/libmtreport.la $(TEST_LIBS) $(LIBELF_LIBS) -ldl
EXTRA_tests_test_inproc_stacks_DEPENDENCIES = tests/progs/stk-chain \
	tests/progs/stk-chain-nopie tests/progs/stk-chain-cxx \
	tests/progs/stk-dso.la tests/progs/lw-lookup.la
endif
