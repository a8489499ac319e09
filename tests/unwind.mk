# tests/unwind: the eBPF source's call stacks on code built without frame
# pointers (issue 12). The programs are built here with fixed flags, not
# the user's CFLAGS: the frame-pointer register must hold what the test
# puts there.
EXTRA_DIST += tests/progs/unw-badfp.c

if ENABLE_EBPF
check_PROGRAMS += tests/progs/unw-badfp
tests_progs_unw_badfp_SOURCES = tests/progs/unw-badfp.c
tests_progs_unw_badfp_CFLAGS = -O2

if HAVE_CHECK
check_PROGRAMS += tests/test-unwind
TESTS += tests/test-unwind
tests_test_unwind_SOURCES = tests/test-unwind.c tests/ebpf-testlib.c \
	tests/ebpf-testlib.h
tests_test_unwind_CFLAGS = $(TEST_CFLAGS)
tests_test_unwind_LDADD = $(TEST_LIBS)
endif
endif
