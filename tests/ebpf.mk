# tests/ebpf: the eBPF source end to end. tests/progs/ are the traced
# programs; they report on stdout the events their calls must produce.
EXTRA_DIST += tests/progs/report.h tests/progs/alloc-jemalloc.c \
	tests/progs/alloc-tcmalloc.c tests/build-mimalloc-static.sh \
	tests/progs/alloc-mimalloc.c tests/progs/libctor.c \
	tests/progs/alloc-libctor.c

PROG_CFLAGS = $(AM_CFLAGS) -fno-builtin
PROG_CPPFLAGS = -I$(srcdir)/tests/progs

check_PROGRAMS += tests/progs/alloc-basic tests/progs/alloc-static \
	tests/progs/alloc-mmap tests/progs/alloc-ctor tests/progs/alloc-cxx \
	tests/progs/alloc-forktree tests/progs/alloc-dlopen \
	tests/progs/alloc-toggle tests/progs/alloc-stress \
	tests/progs/alloc-storm tests/progs/sys-mix \
	tests/progs/alloc-dlopen-cxx tests/progs/exec-self \
	tests/progs/fork-exec
tests_progs_exec_self_SOURCES = tests/progs/exec-self.c
tests_progs_exec_self_CPPFLAGS = $(PROG_CPPFLAGS)
tests_progs_exec_self_CFLAGS = $(PROG_CFLAGS)
tests_progs_fork_exec_SOURCES = tests/progs/fork-exec.c
tests_progs_fork_exec_CPPFLAGS = $(PROG_CPPFLAGS)
tests_progs_fork_exec_CFLAGS = $(PROG_CFLAGS)
tests_progs_alloc_basic_SOURCES = tests/progs/alloc-basic.c
tests_progs_alloc_basic_CPPFLAGS = $(PROG_CPPFLAGS)
tests_progs_alloc_basic_CFLAGS = $(PROG_CFLAGS)
# glibc linked statically: the allocator is found in the executable
tests_progs_alloc_static_SOURCES = tests/progs/alloc-basic.c
tests_progs_alloc_static_CPPFLAGS = $(PROG_CPPFLAGS)
tests_progs_alloc_static_CFLAGS = $(PROG_CFLAGS)
tests_progs_alloc_static_LDFLAGS = -all-static
tests_progs_alloc_mmap_SOURCES = tests/progs/alloc-mmap.c
tests_progs_alloc_mmap_CPPFLAGS = $(PROG_CPPFLAGS)
tests_progs_alloc_mmap_CFLAGS = $(PROG_CFLAGS)
tests_progs_alloc_ctor_SOURCES = tests/progs/alloc-ctor.c
tests_progs_alloc_ctor_CPPFLAGS = $(PROG_CPPFLAGS)
tests_progs_alloc_ctor_CFLAGS = $(PROG_CFLAGS)
tests_progs_alloc_cxx_SOURCES = tests/progs/alloc-cxx.cc
tests_progs_alloc_cxx_CPPFLAGS = $(PROG_CPPFLAGS)
tests_progs_alloc_cxx_CXXFLAGS = -std=c++17 -fno-builtin -Wall
tests_progs_alloc_forktree_SOURCES = tests/progs/alloc-forktree.c
tests_progs_alloc_forktree_CPPFLAGS = $(PROG_CPPFLAGS)
tests_progs_alloc_forktree_CFLAGS = $(PROG_CFLAGS)
tests_progs_alloc_forktree_LDADD = $(PTHREAD_LIBS)
tests_progs_alloc_dlopen_SOURCES = tests/progs/alloc-dlopen.c
tests_progs_alloc_dlopen_CPPFLAGS = $(PROG_CPPFLAGS)
tests_progs_alloc_dlopen_CFLAGS = $(PROG_CFLAGS)
tests_progs_alloc_toggle_SOURCES = tests/progs/alloc-toggle.c
tests_progs_alloc_toggle_CPPFLAGS = $(PROG_CPPFLAGS)
tests_progs_alloc_toggle_CFLAGS = $(PROG_CFLAGS)

tests_progs_alloc_stress_SOURCES = tests/progs/alloc-stress.c
tests_progs_alloc_stress_CPPFLAGS = $(PROG_CPPFLAGS)
tests_progs_alloc_stress_CFLAGS = $(PROG_CFLAGS)
tests_progs_alloc_stress_LDADD = $(PTHREAD_LIBS)
tests_progs_alloc_storm_SOURCES = tests/progs/alloc-storm.c
tests_progs_alloc_storm_CFLAGS = $(PROG_CFLAGS)
tests_progs_alloc_storm_LDADD = $(PTHREAD_LIBS)
tests_progs_sys_mix_SOURCES = tests/progs/sys-mix.c
tests_progs_sys_mix_CFLAGS = $(PROG_CFLAGS)
tests_progs_sys_mix_LDADD = $(PTHREAD_LIBS)

# tests/test-dl-reuse.sh: a library loaded where a dlclose'd one was
# (issue 24, item 3): dl-reuse and the two builds of libreuse.c
check_PROGRAMS += tests/progs/dl-reuse
tests_progs_dl_reuse_SOURCES = tests/progs/dl-reuse.c
tests_progs_dl_reuse_CFLAGS = $(PROG_CFLAGS) -g
tests_progs_dl_reuse_LDADD = -ldl
# tests/test-dl-many.sh: thousands of libraries (issue 24, item 2)
check_PROGRAMS += tests/progs/dl-many
tests_progs_dl_many_SOURCES = tests/progs/dl-many.c
tests_progs_dl_many_CFLAGS = $(PROG_CFLAGS) -g
tests_progs_dl_many_LDADD = -ldl
check_LTLIBRARIES += tests/progs/libreuse-alpha.la \
	tests/progs/libreuse-gamma.la
tests_progs_libreuse_alpha_la_SOURCES = tests/progs/libreuse.c
tests_progs_libreuse_alpha_la_CPPFLAGS = -DREUSE_NAME=alpha
tests_progs_libreuse_alpha_la_CFLAGS = -O1 -g -fno-builtin
tests_progs_libreuse_alpha_la_LDFLAGS = -module -avoid-version -shared \
	-rpath /nowhere
tests_progs_libreuse_gamma_la_SOURCES = tests/progs/libreuse.c
tests_progs_libreuse_gamma_la_CPPFLAGS = -DREUSE_NAME=gamma
tests_progs_libreuse_gamma_la_CFLAGS = -O1 -g -fno-builtin
tests_progs_libreuse_gamma_la_LDFLAGS = -module -avoid-version -shared \
	-rpath /nowhere
TESTS += tests/test-dl-reuse.sh
dist_noinst_SCRIPTS += tests/test-dl-reuse.sh

# the library alloc-dlopen loads: tests/progs/.libs/libdlalloc.so
check_LTLIBRARIES += tests/progs/libdlalloc.la
tests_progs_libdlalloc_la_SOURCES = tests/progs/libdlalloc.c
tests_progs_libdlalloc_la_LDFLAGS = -module -avoid-version -shared \
	-rpath /nowhere
# a C program (no libstdc++ of its own) and the C++ library it opens with
# RTLD_LOCAL: tests/progs/.libs/libcxxlocal.so
tests_progs_alloc_dlopen_cxx_SOURCES = tests/progs/alloc-dlopen-cxx.c
tests_progs_alloc_dlopen_cxx_CPPFLAGS = $(PROG_CPPFLAGS)
tests_progs_alloc_dlopen_cxx_CFLAGS = $(PROG_CFLAGS)
tests_progs_alloc_dlopen_cxx_LDADD = -ldl
check_LTLIBRARIES += tests/progs/libcxxlocal.la
tests_progs_libcxxlocal_la_SOURCES = tests/progs/libcxxlocal.cc
tests_progs_libcxxlocal_la_CPPFLAGS = $(PROG_CPPFLAGS)
tests_progs_libcxxlocal_la_CXXFLAGS = -std=c++17 -fno-builtin -Wall
tests_progs_libcxxlocal_la_LDFLAGS = -module -avoid-version -shared \
	-rpath /nowhere

# Programs for allocators that may not be installed: built when they link,
# their test cases skipped otherwise (failed where BPF tests are required).
# Debian has no static mimalloc: alloc-mimalloc-static links the archive
# that tests/build-mimalloc-static.sh makes, found through
# $MT_MIMALLOC_STATIC_DIR (./quickstart test sets it). alloc-libctor links a plain shared
# library found through $ORIGIN (no libtool wrapper script in between).
OPTIONAL_PROGS = tests/progs/alloc-jemalloc tests/progs/alloc-jemalloc-static \
	tests/progs/alloc-mimalloc tests/progs/alloc-mimalloc-static \
	tests/progs/alloc-tcmalloc tests/progs/libctor.so \
	tests/progs/alloc-libctor
tests/progs/optional.stamp: $(srcdir)/tests/progs/alloc-jemalloc.c \
		$(srcdir)/tests/progs/alloc-mimalloc.c \
		$(srcdir)/tests/progs/alloc-tcmalloc.c \
		$(srcdir)/tests/progs/libctor.c \
		$(srcdir)/tests/progs/alloc-libctor.c \
		$(srcdir)/tests/progs/report.h
	$(AM_V_GEN)$(MKDIR_P) tests/progs; \
	pc="$(CC) $(PROG_CPPFLAGS) $(CPPFLAGS) $(PROG_CFLAGS) $(CFLAGS) $(LDFLAGS)"; \
	$$pc -o tests/progs/alloc-jemalloc \
		$(srcdir)/tests/progs/alloc-jemalloc.c -ljemalloc \
		2>/dev/null || rm -f tests/progs/alloc-jemalloc; \
	$$pc -o tests/progs/alloc-jemalloc-static \
		$(srcdir)/tests/progs/alloc-jemalloc.c -Wl,-Bstatic -ljemalloc \
		-Wl,-Bdynamic -lpthread -lm -ldl -lstdc++ \
		2>/dev/null || rm -f tests/progs/alloc-jemalloc-static; \
	$$pc -o tests/progs/alloc-mimalloc \
		$(srcdir)/tests/progs/alloc-mimalloc.c -lmimalloc \
		2>/dev/null || rm -f tests/progs/alloc-mimalloc; \
	if [ -n "$$MT_MIMALLOC_STATIC_DIR" ]; then \
		$$pc -o tests/progs/alloc-mimalloc-static \
			$(srcdir)/tests/progs/alloc-mimalloc.c \
			-L"$$MT_MIMALLOC_STATIC_DIR" -Wl,-Bstatic -lmimalloc \
			-Wl,-Bdynamic -lpthread \
			2>/dev/null || rm -f tests/progs/alloc-mimalloc-static; \
	fi; \
	$$pc -o tests/progs/alloc-tcmalloc \
		$(srcdir)/tests/progs/alloc-tcmalloc.c -ltcmalloc \
		2>/dev/null || rm -f tests/progs/alloc-tcmalloc; \
	$$pc -shared -fPIC -o tests/progs/libctor.so \
		$(srcdir)/tests/progs/libctor.c && \
	$$pc -o tests/progs/alloc-libctor \
		$(srcdir)/tests/progs/alloc-libctor.c -Ltests/progs -lctor \
		'-Wl,-rpath,$$ORIGIN' || rm -f tests/progs/alloc-libctor; \
	touch $@
CLEANFILES += tests/progs/optional.stamp $(OPTIONAL_PROGS)

if ENABLE_EBPF
if HAVE_CHECK
check_PROGRAMS += tests/test-ebpf
TESTS += tests/test-ebpf
tests_test_ebpf_SOURCES = tests/test-ebpf.c tests/ebpf-testlib.c \
	tests/ebpf-testlib.h tests/scenarios.c tests/scenarios.h
tests_test_ebpf_CFLAGS = $(TEST_CFLAGS)
tests_test_ebpf_LDADD = $(TEST_LIBS)
EXTRA_tests_test_ebpf_DEPENDENCIES = tests/progs/optional.stamp

# the kernel structures CO-RE relocates against, copied for libbpf, are
# the kernel's (no root needed)
check_PROGRAMS += tests/test-kbtf
TESTS += tests/test-kbtf
tests_test_kbtf_SOURCES = tests/test-kbtf.c plugins/ebpf/kbtf.c \
	plugins/ebpf/kbtf.h
tests_test_kbtf_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/plugins/ebpf
tests_test_kbtf_CFLAGS = $(TEST_CFLAGS) $(LIBBPF_CFLAGS)
tests_test_kbtf_LDADD = $(TEST_LIBS) $(LIBBPF_LIBS)
EXTRA_tests_test_kbtf_DEPENDENCIES = plugins/ebpf/memtrack.bpf.o
# common/elf-notes.h, the build-id parser of kbtf.c and of the interposer's
# mappings (libelf, which the eBPF source needs, reads the reference)
check_PROGRAMS += tests/test-elf-notes
TESTS += tests/test-elf-notes
tests_test_elf_notes_SOURCES = tests/test-elf-notes.c
tests_test_elf_notes_CFLAGS = $(TEST_CFLAGS) $(LIBELF_CFLAGS)
tests_test_elf_notes_LDADD = common/libmtcommon.la $(TEST_LIBS) $(LIBELF_LIBS)

# --source auto: the scenario table, a mixed tree against the eBPF source,
# the hand-over
check_PROGRAMS += tests/test-auto
TESTS += tests/test-auto
tests_test_auto_SOURCES = tests/test-auto.c tests/ebpf-testlib.c \
	tests/ebpf-testlib.h tests/scenarios.c tests/scenarios.h
tests_test_auto_CFLAGS = $(TEST_CFLAGS)
tests_test_auto_LDADD = $(TEST_LIBS)
EXTRA_tests_test_auto_DEPENDENCIES = tests/progs/optional.stamp

# a slow consumer, a small ring, memtrack killed: nothing lost, nothing
# left stopped
check_PROGRAMS += tests/test-pressure
TESTS += tests/test-pressure
tests_test_pressure_SOURCES = tests/test-pressure.c tests/ebpf-testlib.c \
	tests/ebpf-testlib.h
tests_test_pressure_CFLAGS = $(TEST_CFLAGS)
tests_test_pressure_LDADD = $(TEST_LIBS)

# both sources on real programs of Debian (sqlite3, jq, xz, sed, sort):
# equal per-type counts and bytes
check_PROGRAMS += tests/test-sources-agree
TESTS += tests/test-sources-agree
tests_test_sources_agree_SOURCES = tests/test-sources-agree.c \
	tests/ebpf-testlib.c tests/ebpf-testlib.h
tests_test_sources_agree_CFLAGS = $(TEST_CFLAGS)
tests_test_sources_agree_LDADD = $(TEST_LIBS)
endif
endif

# tests/test-ebpf-holds.sh: a process held for an attach is not seen
# stopped by its shell's job control or its debugger (issue 28: the exec
# gate, plugins/ebpf/gate.c), and the tree still execs after memtrack is
# killed; skips without root and BPF.
if ENABLE_EBPF
TESTS += tests/test-ebpf-holds.sh
endif
dist_noinst_SCRIPTS += tests/test-ebpf-holds.sh

# tests/test-ebpf-freeze.sh: a process held for a full ring is frozen
# (plugins/ebpf/freeze.c), which job control and gdb do not see, and the
# watchdog thaws it when memtrack is killed; skips without root, BPF and
# a writable cgroup v2 hierarchy.
if ENABLE_EBPF
TESTS += tests/test-ebpf-freeze.sh
endif
dist_noinst_SCRIPTS += tests/test-ebpf-freeze.sh

# tests/test-ebpf-stacks-holds.sh: with --stacks, execs and dlopens are
# recorded while the caller waits in the exec gate, not stopped: job
# control and gdb see nothing; skips without root and BPF.
if ENABLE_EBPF
TESTS += tests/test-ebpf-stacks-holds.sh
endif
dist_noinst_SCRIPTS += tests/test-ebpf-stacks-holds.sh

# tests/test-dl-many.sh: 4,500 dlopens with --stacks, each library's code
# recorded once and every allocation named (issue 24); the eBPF part
# skips without root and BPF.
TESTS += tests/test-dl-many.sh
dist_noinst_SCRIPTS += tests/test-dl-many.sh

# tests/test-attach.sh: memtrack --pid (issue 25); skips without root and
# BPF.
check_PROGRAMS += tests/progs/attach-target tests/progs/attach-busy
tests_progs_attach_target_SOURCES = tests/progs/attach-target.c
tests_progs_attach_target_CFLAGS = $(PROG_CFLAGS) $(PTHREAD_CFLAGS)
tests_progs_attach_target_LDADD = $(PTHREAD_LIBS)
tests_progs_attach_busy_SOURCES = tests/progs/attach-busy.c
tests_progs_attach_busy_CFLAGS = $(PROG_CFLAGS) $(PTHREAD_CFLAGS) -g
tests_progs_attach_busy_LDADD = $(PTHREAD_LIBS)
if ENABLE_EBPF
TESTS += tests/test-attach.sh tests/test-attach-busy.sh
endif
dist_noinst_SCRIPTS += tests/test-attach.sh tests/test-attach-busy.sh

# tests/test-auto-sample.sh: --sample-bytes under auto (plugins/ebpf/
# sample.c): tests/progs/sample-mix as the interposer's and linked
# statically as the uprobes' in one tree, estimated within 10 %, every
# free of a recorded block; an image's events before its hello dropped.
check_PROGRAMS += tests/progs/sample-mix-static
tests_progs_sample_mix_static_SOURCES = tests/progs/sample-mix.c
tests_progs_sample_mix_static_CFLAGS = $(WARN_CFLAGS) -O1 -fno-builtin
tests_progs_sample_mix_static_LDADD = -lpthread
tests_progs_sample_mix_static_LDFLAGS = -all-static
if ENABLE_EBPF
TESTS += tests/test-auto-sample.sh
endif
dist_noinst_SCRIPTS += tests/test-auto-sample.sh

# tests/test-auto-harm.sh: what a traced program's ring may do to auto's
# order (host/source-auto.c): an event stamped an hour ahead
if ENABLE_EBPF
TESTS += tests/test-auto-harm.sh
endif
dist_noinst_SCRIPTS += tests/test-auto-harm.sh
