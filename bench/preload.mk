# bench/bench-preload.sh: the preload source against heaptrack, per event,
# without and with stacks ('make bench-preload', part of 'make bench').
# bench-ebpf-work (N malloc/free pairs on 1 or more threads, the loops
# timed inside) is the workload of this benchmark and of bench-ebpf.
EXTRA_DIST += bench/bench-preload.sh bench/bench-ebpf-work.c
EXTRA_PROGRAMS += bench/bench-ebpf-work
bench_bench_ebpf_work_SOURCES = bench/bench-ebpf-work.c
bench_bench_ebpf_work_CFLAGS = -O2 -fno-builtin $(PTHREAD_CFLAGS)
bench_bench_ebpf_work_LDADD = $(PTHREAD_LIBS)
CLEANFILES += bench/bench-ebpf-work

bench-preload: bench/bench-ebpf-work$(EXEEXT) memtrack$(EXEEXT) \
		$(plugin_LTLIBRARIES) $(pkglib_LTLIBRARIES)
	MEMTRACK_PLUGIN_PATH='$(abs_top_builddir)/plugins/.libs' \
	$(SHELL) $(srcdir)/bench/bench-preload.sh '$(abs_top_builddir)'
.PHONY: bench-preload
bench: bench-preload

# bench/bench-sample.sh: what --sample-bytes 512K costs (issue 26; 'make
# bench-sample', not part of 'make bench')
EXTRA_DIST += bench/bench-sample.sh
bench-sample: bench/bench-ebpf-work$(EXEEXT) memtrack$(EXEEXT) \
		$(plugin_LTLIBRARIES) $(pkglib_LTLIBRARIES)
	MEMTRACK_PLUGIN_PATH='$(abs_top_builddir)/plugins/.libs' \
	$(SHELL) $(srcdir)/bench/bench-sample.sh '$(abs_top_builddir)'
.PHONY: bench-sample
