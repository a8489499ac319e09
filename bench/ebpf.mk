# bench/ebpf: the eBPF source against the floor of do-nothing probes
# ('make bench-ebpf', also part of 'make bench'; needs root).
EXTRA_DIST += bench/bench-ebpf.c bench/bench-ebpf-work.c

if ENABLE_EBPF
EXTRA_PROGRAMS += bench/bench-ebpf bench/bench-ebpf-work
bench_bench_ebpf_SOURCES = bench/bench-ebpf.c
nodist_bench_bench_ebpf_SOURCES = bpf/null.skel.h
bench_bench_ebpf_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_builddir)/bpf \
	-DMT_WAIT_WATCHDOGS='"$(abs_top_srcdir)/bench/wait-watchdogs.sh"'
bench_bench_ebpf_CFLAGS = $(AM_CFLAGS) $(LIBBPF_CFLAGS)
bench_bench_ebpf_LDADD = $(LIBBPF_LIBS)
bench_bench_ebpf_work_SOURCES = bench/bench-ebpf-work.c
bench_bench_ebpf_work_CFLAGS = -O2 -fno-builtin
CLEANFILES += bench/bench-ebpf bench/bench-ebpf-work

# the skeleton is generated: make it exist before the first compile
bench/bench_ebpf-bench-ebpf.$(OBJEXT): bpf/null.skel.h

bench-ebpf: bench/bench-ebpf$(EXEEXT) bench/bench-ebpf-work$(EXEEXT) \
		memtrack$(EXEEXT) $(plugin_LTLIBRARIES)
	MEMTRACK_PLUGIN_PATH='$(abs_top_builddir)/plugins/.libs' \
	MT_BUILDDIR='$(abs_top_builddir)' bench/bench-ebpf$(EXEEXT)
BENCH_EBPF = bench-ebpf bench-pressure
endif

# bench/bench-pressure.sh: producers against a slow consumer, stops and
# stop-to-resume latency ('make bench-pressure', part of 'make bench')
EXTRA_DIST += bench/bench-pressure.sh
if ENABLE_EBPF
bench-pressure: memtrack$(EXEEXT) $(plugin_LTLIBRARIES) \
		tests/progs/alloc-storm$(EXEEXT)
	MEMTRACK_PLUGIN_PATH='$(abs_top_builddir)/plugins/.libs' \
	$(SHELL) $(srcdir)/bench/bench-pressure.sh '$(abs_top_builddir)'
endif

# Outside the conditional: automake wants .PHONY and 'bench' defined once.
.PHONY: bench-ebpf bench-pressure
bench: $(BENCH_EBPF)
