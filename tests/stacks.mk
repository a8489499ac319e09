# tests/stacks: call stacks end to end (memtrack --source ebpf:stacks, then
# memtrack report). The traced programs are built here with exactly the
# flags frame-pointer stacks need (-O0, frame pointers, no inlining), not
# with the user's CFLAGS: a tail call or an inlined function would remove
# the very frames the test looks for.
EXTRA_DIST += tests/progs/stack-c.c tests/progs/stack-cxx.cc

if ENABLE_EBPF
STACK_PROG_FLAGS = -O0 -g -fno-omit-frame-pointer -fno-inline \
	-fno-optimize-sibling-calls -fno-builtin
STACK_PROGS = tests/progs/stack-c tests/progs/stack-c-static \
	tests/progs/stack-cxx
tests/progs/stacks.stamp: $(srcdir)/tests/progs/stack-c.c \
		$(srcdir)/tests/progs/stack-cxx.cc
	$(AM_V_GEN)$(MKDIR_P) tests/progs && \
	$(CC) $(STACK_PROG_FLAGS) -fPIE -pie -o tests/progs/stack-c \
		$(srcdir)/tests/progs/stack-c.c && \
	$(CXX) $(STACK_PROG_FLAGS) -o tests/progs/stack-cxx \
		$(srcdir)/tests/progs/stack-cxx.cc && \
	{ $(CC) $(STACK_PROG_FLAGS) -static -o tests/progs/stack-c-static \
		$(srcdir)/tests/progs/stack-c.c 2>/dev/null || \
		rm -f tests/progs/stack-c-static; } && \
	touch $@
CLEANFILES += tests/progs/stacks.stamp $(STACK_PROGS)

if HAVE_CHECK
check_PROGRAMS += tests/test-stacks
TESTS += tests/test-stacks
tests_test_stacks_SOURCES = tests/test-stacks.c tests/ebpf-testlib.c \
	tests/ebpf-testlib.h
tests_test_stacks_CFLAGS = $(TEST_CFLAGS)
tests_test_stacks_LDADD = $(TEST_LIBS) -ldl
EXTRA_tests_test_stacks_DEPENDENCIES = tests/progs/stacks.stamp
endif
endif
