# tests/test-preload: the preload source end to end, on the scenario table
# of tests/scenarios.c and programs of its own. Needs neither root nor BPF.
PRELOAD_PROGS = tests/progs/alloc-signal tests/progs/alloc-forkthreads \
	tests/progs/alloc-killme tests/progs/alloc-vfork \
	tests/progs/closefds-exec tests/progs/alloc-exit \
	tests/progs/alloc-own-malloc tests/progs/alloc-large \
	tests/progs/alloc-throw tests/progs/alloc-lzma \
	tests/progs/alloc-malloc-address tests/progs/exec-fifo
check_PROGRAMS += $(PRELOAD_PROGS)
tests_progs_alloc_signal_SOURCES = tests/progs/alloc-signal.c
tests_progs_alloc_signal_CPPFLAGS = $(PROG_CPPFLAGS)
tests_progs_alloc_signal_CFLAGS = $(PROG_CFLAGS)
tests_progs_alloc_forkthreads_SOURCES = tests/progs/alloc-forkthreads.c
tests_progs_alloc_forkthreads_CPPFLAGS = $(PROG_CPPFLAGS)
tests_progs_alloc_forkthreads_CFLAGS = $(PROG_CFLAGS)
tests_progs_alloc_forkthreads_LDADD = $(PTHREAD_LIBS)
tests_progs_alloc_killme_SOURCES = tests/progs/alloc-killme.c
tests_progs_alloc_killme_CPPFLAGS = $(PROG_CPPFLAGS)
tests_progs_alloc_killme_CFLAGS = $(PROG_CFLAGS)
tests_progs_alloc_killme_LDADD = $(PTHREAD_LIBS)
tests_progs_alloc_vfork_SOURCES = tests/progs/alloc-vfork.c
tests_progs_alloc_vfork_CPPFLAGS = $(PROG_CPPFLAGS)
tests_progs_alloc_vfork_CFLAGS = $(PROG_CFLAGS)
tests_progs_alloc_vfork_LDADD = $(PTHREAD_LIBS)
tests_progs_closefds_exec_SOURCES = tests/progs/closefds-exec.c
tests_progs_alloc_exit_SOURCES = tests/progs/alloc-exit.c
tests_progs_alloc_exit_CPPFLAGS = $(PROG_CPPFLAGS)
tests_progs_alloc_exit_CFLAGS = $(PROG_CFLAGS)
# exported, as when a library of the process refers to malloc
tests_progs_alloc_own_malloc_SOURCES = tests/progs/alloc-own-malloc.c
tests_progs_alloc_own_malloc_CPPFLAGS = $(PROG_CPPFLAGS)
tests_progs_alloc_own_malloc_CFLAGS = $(PROG_CFLAGS)
tests_progs_alloc_own_malloc_LDFLAGS = -export-dynamic
tests_progs_alloc_large_SOURCES = tests/progs/alloc-large.c
tests_progs_alloc_large_CPPFLAGS = $(PROG_CPPFLAGS)
tests_progs_alloc_large_CFLAGS = $(PROG_CFLAGS)
tests_progs_alloc_throw_SOURCES = tests/progs/alloc-throw.cc
tests_progs_alloc_throw_CPPFLAGS = $(PROG_CPPFLAGS)
tests_progs_alloc_throw_CXXFLAGS = -std=c++17 -fno-builtin -Wall
# needs liblzma, as libunwind does (libunwind-dev brings liblzma-dev)
tests_progs_alloc_lzma_SOURCES = tests/progs/alloc-lzma.c
tests_progs_alloc_lzma_CPPFLAGS = $(PROG_CPPFLAGS)
tests_progs_alloc_lzma_CFLAGS = $(PROG_CFLAGS)
tests_progs_alloc_lzma_LDADD = -llzma
# non-PIE and &malloc in its code: a canonical PLT entry for malloc, not a
# malloc of its own (python3.11's case, issue 27)
tests_progs_alloc_malloc_address_SOURCES = tests/progs/alloc-malloc-address.c
tests_progs_alloc_malloc_address_CPPFLAGS = $(PROG_CPPFLAGS)
tests_progs_alloc_malloc_address_CFLAGS = $(PROG_CFLAGS) -fno-PIE
tests_progs_alloc_malloc_address_LDFLAGS = -Wc,-no-pie
tests_progs_exec_fifo_SOURCES = tests/progs/exec-fifo.c
tests_progs_exec_fifo_CPPFLAGS = $(PROG_CPPFLAGS)
tests_progs_exec_fifo_CFLAGS = $(PROG_CFLAGS)

if HAVE_CHECK
check_PROGRAMS += tests/test-preload
TESTS += tests/test-preload
tests_test_preload_SOURCES = tests/test-preload.c tests/scenarios.c \
	tests/scenarios.h tests/ebpf-testlib.c tests/ebpf-testlib.h
tests_test_preload_CFLAGS = $(TEST_CFLAGS)
tests_test_preload_LDADD = $(TEST_LIBS)
EXTRA_tests_test_preload_DEPENDENCIES = tests/progs/optional.stamp \
	$(PRELOAD_PROGS)

# the ring alone, in one process
check_PROGRAMS += tests/test-preload-ring
TESTS += tests/test-preload-ring
tests_test_preload_ring_SOURCES = tests/test-preload-ring.c \
	plugins/preload/interposer/ring-put.c \
	plugins/preload/source/ring-read.c plugins/preload/tsc.c
tests_test_preload_ring_CPPFLAGS = $(AM_CPPFLAGS) \
	$(PRELOAD_INTERPOSER_CPPFLAGS) $(PRELOAD_SOURCE_CPPFLAGS)
tests_test_preload_ring_CFLAGS = $(TEST_CFLAGS)
tests_test_preload_ring_LDADD = $(TEST_LIBS) $(PTHREAD_LIBS)

# the table of sampled blocks and its filter (sample.c), in one process
check_PROGRAMS += tests/test-preload-sample
TESTS += tests/test-preload-sample
tests_test_preload_sample_SOURCES = tests/test-preload-sample.c \
	plugins/preload/interposer/sample.c
tests_test_preload_sample_CPPFLAGS = $(AM_CPPFLAGS) \
	$(PRELOAD_INTERPOSER_CPPFLAGS) $(PRELOAD_SOURCE_CPPFLAGS)
tests_test_preload_sample_CFLAGS = $(TEST_CFLAGS)
tests_test_preload_sample_LDADD = $(TEST_LIBS) $(PTHREAD_LIBS)

# metadata records through the ring (meta.c), in one process
check_PROGRAMS += tests/test-preload-meta
TESTS += tests/test-preload-meta
tests_test_preload_meta_SOURCES = tests/test-preload-meta.c \
	plugins/preload/interposer/ring-put.c \
	plugins/preload/source/ring-read.c plugins/preload/tsc.c \
	plugins/preload/source/meta.c
tests_test_preload_meta_CPPFLAGS = $(AM_CPPFLAGS) \
	$(PRELOAD_INTERPOSER_CPPFLAGS) $(PRELOAD_SOURCE_CPPFLAGS)
tests_test_preload_meta_CFLAGS = $(TEST_CFLAGS)
tests_test_preload_meta_LDADD = $(TEST_LIBS) $(PTHREAD_LIBS)
endif

# tests/test-preload-syscalls: root mode (syscalls=bpf) against the eBPF
# source, event for event. Root and BPF: skipped without.
if ENABLE_EBPF
if HAVE_CHECK
check_PROGRAMS += tests/test-preload-syscalls
TESTS += tests/test-preload-syscalls
tests_test_preload_syscalls_SOURCES = tests/test-preload-syscalls.c \
	tests/scenarios.c tests/scenarios.h tests/ebpf-testlib.c \
	tests/ebpf-testlib.h
tests_test_preload_syscalls_CFLAGS = $(TEST_CFLAGS)
tests_test_preload_syscalls_LDADD = $(TEST_LIBS)
EXTRA_tests_test_preload_syscalls_DEPENDENCIES = tests/progs/optional.stamp \
	$(PRELOAD_PROGS)
endif
endif

# tests/test-preload-stop.sh: root mode when tracing stops before the
# command ends (a sink error, a control stop): memtrack still exits. Root
# and BPF: skipped without.
TESTS += tests/test-preload-stop.sh
dist_noinst_SCRIPTS += tests/test-preload-stop.sh

# tests/test-preload-path.sh: the interposer under a path with a space or
# a colon (which LD_PRELOAD cannot hold) records as from the build tree.
TESTS += tests/test-preload-path.sh
dist_noinst_SCRIPTS += tests/test-preload-path.sh

# tests/test-preload-skel.sh: root mode's program, from the light skeleton
# and from libbpf's, records the same (needs root and BPF)
TESTS += tests/test-preload-skel.sh
dist_noinst_SCRIPTS += tests/test-preload-skel.sh

# ABI 1.1 (command_env): a source built for 1.0 still loads
check_LTLIBRARIES += tests/fixtures/source-abi10.la
tests_fixtures_source_abi10_la_SOURCES = tests/fixtures/source-abi10.c
tests_fixtures_source_abi10_la_LDFLAGS = $(FIXTURE_FLAGS)
if HAVE_CHECK
check_PROGRAMS += tests/test-plugin-abi
TESTS += tests/test-plugin-abi
tests_test_plugin_abi_SOURCES = tests/test-plugin-abi.c
tests_test_plugin_abi_CFLAGS = $(TEST_CFLAGS)
tests_test_plugin_abi_LDADD = host/libmthost.la $(TEST_LIBS)
EXTRA_tests_test_plugin_abi_DEPENDENCIES = tests/fixtures/source-abi10.la
endif

# tests/test-preload-stacks: --source preload --stacks, end to end, on
# programs built -O2 -fomit-frame-pointer (whole stacks from .eh_frame)
PSTK_CFLAGS = $(WARN_CFLAGS) $(PTHREAD_CFLAGS) -g -O2 -fomit-frame-pointer \
	-fno-builtin
PSTK_PROGS = tests/progs/pstk-chain tests/progs/pstk-chain-nopie \
	tests/progs/pstk-chain-cxx
check_PROGRAMS += $(PSTK_PROGS)
# PIE (Debian's default); -export-dynamic as a symbol table for dladdr
tests_progs_pstk_chain_SOURCES = tests/progs/pstk-chain.c
tests_progs_pstk_chain_CFLAGS = $(PSTK_CFLAGS)
tests_progs_pstk_chain_LDFLAGS = -export-dynamic
tests_progs_pstk_chain_LDADD = $(PTHREAD_LIBS) -ldl
# the same, at a fixed address
tests_progs_pstk_chain_nopie_SOURCES = tests/progs/pstk-chain.c
tests_progs_pstk_chain_nopie_CFLAGS = $(PSTK_CFLAGS) -fno-PIE
tests_progs_pstk_chain_nopie_LDFLAGS = -export-dynamic -Wc,-no-pie
tests_progs_pstk_chain_nopie_LDADD = $(PTHREAD_LIBS) -ldl
# through libstdc++'s operator new
tests_progs_pstk_chain_cxx_SOURCES = tests/progs/pstk-chain-cxx.cc
tests_progs_pstk_chain_cxx_CXXFLAGS = -Wall -O2 -fomit-frame-pointer
# tests/progs/.libs/pstk-dso.so, dlopen'd by pstk-chain dlopen
check_LTLIBRARIES += tests/progs/pstk-dso.la
tests_progs_pstk_dso_la_SOURCES = tests/progs/pstk-dso.c
tests_progs_pstk_dso_la_CFLAGS = $(PSTK_CFLAGS)
tests_progs_pstk_dso_la_LDFLAGS = -module -avoid-version -shared \
	-rpath /nowhere

if HAVE_CHECK
check_PROGRAMS += tests/test-preload-stacks
TESTS += tests/test-preload-stacks
tests_test_preload_stacks_SOURCES = tests/test-preload-stacks.c \
	tests/scenarios.c tests/scenarios.h tests/ebpf-testlib.c \
	tests/ebpf-testlib.h
tests_test_preload_stacks_CFLAGS = $(TEST_CFLAGS)
tests_test_preload_stacks_LDADD = $(TEST_LIBS)
EXTRA_tests_test_preload_stacks_DEPENDENCIES = tests/progs/optional.stamp \
	$(PSTK_PROGS) tests/progs/pstk-dso.la
endif

# tests/test-preload-harm.sh: what a traced program may do to the shared
# ring and its descriptors, and what may happen to memtrack; never harm,
# never a loss in silence. Root cases skip without root.
check_PROGRAMS += tests/progs/ring-harm tests/progs/seccomp-run \
	tests/progs/alloc-probe-api
tests_progs_ring_harm_SOURCES = tests/progs/ring-harm.c
tests_progs_ring_harm_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/plugins/preload
tests_progs_ring_harm_CFLAGS = $(PROG_CFLAGS)
tests_progs_seccomp_run_SOURCES = tests/progs/seccomp-run.c
# weak references and dlsym(RTLD_DEFAULT) to allocator APIs it does not
# link (the phantoms case)
tests_progs_alloc_probe_api_SOURCES = tests/progs/alloc-probe-api.c
tests_progs_alloc_probe_api_LDADD = -ldl
TESTS += tests/test-preload-harm.sh
dist_noinst_SCRIPTS += tests/test-preload-harm.sh

# tests/test-preload-optional.sh: the optional allocators' hooks are bound
# into the GOTs of what the process loads, dlopen'd libraries included:
# a library linked to mimalloc, lazy and -z now, built only where
# mimalloc links
check_PROGRAMS += tests/progs/dl-optional
tests_progs_dl_optional_SOURCES = tests/progs/dl-optional.c
tests_progs_dl_optional_LDADD = -ldl
EXTRA_tests_progs_dl_optional_DEPENDENCIES = tests/progs/dl-optional.stamp \
	tests/progs/optional.stamp
EXTRA_DIST += tests/progs/dl-mimalloc.c
tests/progs/dl-optional.stamp: $(srcdir)/tests/progs/dl-mimalloc.c
	$(AM_V_GEN)$(MKDIR_P) tests/progs; \
	pc="$(CC) $(CPPFLAGS) $(PROG_CFLAGS) $(CFLAGS) $(LDFLAGS) -shared -fPIC"; \
	$$pc -o tests/progs/dl-mimalloc-lazy.so \
		$(srcdir)/tests/progs/dl-mimalloc.c -lmimalloc \
		2>/dev/null || rm -f tests/progs/dl-mimalloc-lazy.so; \
	$$pc -Wl,-z,now -o tests/progs/dl-mimalloc-now.so \
		$(srcdir)/tests/progs/dl-mimalloc.c -lmimalloc \
		2>/dev/null || rm -f tests/progs/dl-mimalloc-now.so; \
	touch $@
CLEANFILES += tests/progs/dl-optional.stamp tests/progs/dl-mimalloc-lazy.so \
	tests/progs/dl-mimalloc-now.so
TESTS += tests/test-preload-optional.sh
dist_noinst_SCRIPTS += tests/test-preload-optional.sh

# tests/test-sample.sh: --sample-bytes (issue 26): 50 seeded runs of
# tests/progs/sample-mix estimate each site's bytes within 10 %, spread as
# the Poisson sampling says; every recorded free is a sampled block's
check_PROGRAMS += tests/progs/sample-mix
tests_progs_sample_mix_SOURCES = tests/progs/sample-mix.c
tests_progs_sample_mix_CFLAGS = $(WARN_CFLAGS) -O1 -fno-builtin
tests_progs_sample_mix_LDADD = -lpthread
# and C++'s operators sampled as malloc is, not again inside
check_PROGRAMS += tests/progs/sample-new
tests_progs_sample_new_SOURCES = tests/progs/sample-new.cc
tests_progs_sample_new_CXXFLAGS = -std=c++17 -O1 -fno-builtin -Wall
TESTS += tests/test-sample.sh
dist_noinst_SCRIPTS += tests/test-sample.sh tests/reference-read.py
