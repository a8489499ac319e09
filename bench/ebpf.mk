# bench/ebpf: the eBPF source against the floor of do-nothing probes
# ('make bench-ebpf', also part of 'make bench'; needs root).
EXTRA_DIST += bench/bench-ebpf.c bench/null.bpf.c

if ENABLE_EBPF
# do-nothing BPF programs, the floor bench-ebpf measures against (built by
# 'make bench' only); vmlinux.h is the eBPF plugin's
bench/null.bpf.o: bench/null.bpf.c plugins/ebpf/vmlinux.h
	$(AM_V_CC)$(MKDIR_P) bench && \
	$(CLANG) $(BPF_CFLAGS) -c $(srcdir)/bench/null.bpf.c -o $@

bench/null.skel.h: bench/null.bpf.o
	$(AM_V_GEN)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@
CLEANFILES += bench/null.bpf.o bench/null.skel.h

EXTRA_PROGRAMS += bench/bench-ebpf
bench_bench_ebpf_SOURCES = bench/bench-ebpf.c
nodist_bench_bench_ebpf_SOURCES = bench/null.skel.h
bench_bench_ebpf_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_builddir)/bench \
	-DMT_WAIT_WATCHDOGS='"$(abs_top_srcdir)/bench/wait-watchdogs.sh"'
bench_bench_ebpf_CFLAGS = $(AM_CFLAGS) $(LIBBPF_CFLAGS)
bench_bench_ebpf_LDADD = $(LIBBPF_LIBS)
CLEANFILES += bench/bench-ebpf

# the skeleton is generated: make it exist before the first compile
bench/bench_ebpf-bench-ebpf.$(OBJEXT): bench/null.skel.h

bench-ebpf: bench/bench-ebpf$(EXEEXT) bench/bench-ebpf-work$(EXEEXT) \
		memtrack$(EXEEXT) $(plugin_LTLIBRARIES)
	MEMTRACK_PLUGIN_PATH='$(abs_top_builddir)/plugins/.libs' \
	MT_BUILDDIR='$(abs_top_builddir)' bench/bench-ebpf$(EXEEXT)
BENCH_EBPF = bench-ebpf bench-pressure
endif

# bench/bench-attach.sh: what memtrack --pid costs a process with 200
# libraries, in its longest pause ('make bench-attach', part of 'make
# bench')
EXTRA_DIST += bench/bench-attach.sh
if ENABLE_EBPF
bench-attach: memtrack$(EXEEXT) $(plugin_LTLIBRARIES)
	$(SHELL) $(srcdir)/bench/bench-attach.sh '$(abs_top_builddir)'
BENCH_EBPF += bench-attach
endif

# bench/bench-auto.sh: --source auto against the program alone, preload
# and ebpf: a gcc tree, headless Chromium, a set-uid sibling, an untraced
# program beside ('make bench-auto', part of 'make bench')
EXTRA_DIST += bench/bench-auto.sh
if ENABLE_EBPF
bench-auto: memtrack$(EXEEXT) $(plugin_LTLIBRARIES)
	$(SHELL) $(srcdir)/bench/bench-auto.sh '$(abs_top_builddir)' \
		'$(abs_top_srcdir)'
BENCH_EBPF += bench-auto
endif

# bench/bench-beside.sh: an untraced program's malloc/free pairs, alone
# and beside a recording, scoped to the tree and not ('make bench-beside',
# part of 'make bench')
EXTRA_DIST += bench/bench-beside.sh
if ENABLE_EBPF
bench-beside: memtrack$(EXEEXT) $(plugin_LTLIBRARIES)
	$(SHELL) $(srcdir)/bench/bench-beside.sh '$(abs_top_builddir)'
BENCH_EBPF += bench-beside
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

# bench/bench-dlopen.sh: N dlopens under each source, the cost per
# library as N grows (issue 24; 'make bench-dlopen', not part of 'make
# bench': minutes)
EXTRA_DIST += bench/bench-dlopen.sh
bench-dlopen: memtrack$(EXEEXT) $(plugin_LTLIBRARIES)
	$(SHELL) $(srcdir)/bench/bench-dlopen.sh '$(abs_top_builddir)'
# the same for N short processes: 'make bench-procs'
bench-procs: memtrack$(EXEEXT) $(plugin_LTLIBRARIES)
	$(SHELL) $(srcdir)/bench/bench-dlopen.sh '$(abs_top_builddir)' procs

# Outside the conditional: automake wants .PHONY and 'bench' defined once.
.PHONY: bench-ebpf bench-pressure bench-attach bench-auto bench-beside bench-dlopen \
	bench-procs
bench: $(BENCH_EBPF)

# bench/bench-unwind.sh: --stacks on Debian's jq (no frame pointers),
# time and whole-stack share against heaptrack ('make bench-unwind').
EXTRA_DIST += bench/bench-unwind.sh
.PHONY: bench-unwind
bench-unwind: memtrack$(EXEEXT) $(plugin_LTLIBRARIES)
	MEMTRACK_PLUGIN_PATH='$(abs_top_builddir)/plugins/.libs' \
		$(SHELL) $(srcdir)/bench/bench-unwind.sh '$(abs_top_builddir)'
