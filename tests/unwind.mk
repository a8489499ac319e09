# tests/unwind: the eBPF source's call stacks on code built without frame
# pointers (issue 12). The programs are built here with fixed flags, not
# the user's CFLAGS alone: the chains must be real frames without frame
# pointers, and the frame-pointer register must hold what the test puts
# there.
EXTRA_DIST += tests/progs/unw-badfp.c tests/progs/unw-chain.c \
	tests/progs/unw-chain-cxx.cc tests/progs/unw-dso.c \
	tests/progs/unw-dlopen.c

if ENABLE_EBPF
UNW_PROG_CFLAGS = -O2 -fomit-frame-pointer -fno-builtin
UNW_PROG_CPPFLAGS = -I$(srcdir)/tests/progs

check_PROGRAMS += tests/progs/unw-badfp tests/progs/unw-chain \
	tests/progs/unw-chain-nopie tests/progs/unw-chain-static \
	tests/progs/unw-chain-cxx tests/progs/unw-dlopen \
	tests/progs/unw-chain-dbgframe
tests_progs_unw_badfp_SOURCES = tests/progs/unw-badfp.c
tests_progs_unw_badfp_CFLAGS = -O2
# PIE (Debian's default)
tests_progs_unw_chain_SOURCES = tests/progs/unw-chain.c
tests_progs_unw_chain_CPPFLAGS = $(UNW_PROG_CPPFLAGS)
tests_progs_unw_chain_CFLAGS = $(UNW_PROG_CFLAGS)
# at a fixed address
tests_progs_unw_chain_nopie_SOURCES = tests/progs/unw-chain.c
tests_progs_unw_chain_nopie_CPPFLAGS = $(UNW_PROG_CPPFLAGS)
tests_progs_unw_chain_nopie_CFLAGS = $(UNW_PROG_CFLAGS) -fno-PIE
tests_progs_unw_chain_nopie_LDFLAGS = -Wc,-no-pie
# static: libc's own tables are in the executable
tests_progs_unw_chain_static_SOURCES = tests/progs/unw-chain.c
tests_progs_unw_chain_static_CPPFLAGS = $(UNW_PROG_CPPFLAGS)
tests_progs_unw_chain_static_CFLAGS = $(UNW_PROG_CFLAGS)
tests_progs_unw_chain_static_LDFLAGS = -all-static
# its own code's CFI in .debug_frame only (.eh_frame: the start files')
tests_progs_unw_chain_dbgframe_SOURCES = tests/progs/unw-chain.c
tests_progs_unw_chain_dbgframe_CPPFLAGS = $(UNW_PROG_CPPFLAGS)
tests_progs_unw_chain_dbgframe_CFLAGS = $(UNW_PROG_CFLAGS) -g \
	-fno-asynchronous-unwind-tables -fno-unwind-tables
# through libstdc++'s operator new[]
tests_progs_unw_chain_cxx_SOURCES = tests/progs/unw-chain-cxx.cc
tests_progs_unw_chain_cxx_CPPFLAGS = $(UNW_PROG_CPPFLAGS)
tests_progs_unw_chain_cxx_CXXFLAGS = -O2 -fomit-frame-pointer
tests_progs_unw_dlopen_SOURCES = tests/progs/unw-dlopen.c
tests_progs_unw_dlopen_CFLAGS = -O2
tests_progs_unw_dlopen_LDADD = -ldl
# the library unw-dlopen loads: tests/progs/.libs/unw-dso.so
check_LTLIBRARIES += tests/progs/unw-dso.la
tests_progs_unw_dso_la_SOURCES = tests/progs/unw-dso.c
tests_progs_unw_dso_la_CPPFLAGS = $(UNW_PROG_CPPFLAGS)
tests_progs_unw_dso_la_CFLAGS = $(UNW_PROG_CFLAGS)
tests_progs_unw_dso_la_LDFLAGS = -module -avoid-version -shared \
	-rpath /nowhere

if HAVE_CHECK
check_PROGRAMS += tests/test-unwind
TESTS += tests/test-unwind
tests_test_unwind_SOURCES = tests/test-unwind.c tests/ebpf-testlib.c \
	tests/ebpf-testlib.h
tests_test_unwind_CFLAGS = $(TEST_CFLAGS)
tests_test_unwind_LDADD = $(TEST_LIBS)
endif
endif
