# bench: throughput benchmarks, built and run only by 'make bench' (never by
# 'make' or 'make check': they take seconds and their numbers depend on the
# machine).
EXTRA_PROGRAMS = bench/bench-write
bench_bench_write_SOURCES = bench/bench-write.c \
	plugins/msgpack-zstd/msgpack-write.c plugins/msgpack-zstd/msgpack.h
# msgpack-write.c is the plugin's own serializer, compiled in so that the floor
# compresses exactly the bytes the encoder produces.
bench_bench_write_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir) \
	-I$(top_srcdir)/plugins/msgpack-zstd
bench_bench_write_CFLAGS = $(AM_CFLAGS) $(ZSTD_CFLAGS)
bench_bench_write_LDADD = host/libmthost.la $(ZSTD_LIBS) $(PTHREAD_LIBS)
CLEANFILES += $(EXTRA_PROGRAMS)
EXTRA_DIST += bench/bench-replay.sh bench/wait-watchdogs.sh

# The eBPF benchmarks run first (prerequisites): wait until their memtrack
# watchdogs have closed the probes, or every malloc of bench-write traps.
.PHONY: bench
bench: bench/bench-write$(EXEEXT) memtrack$(EXEEXT) $(plugin_LTLIBRARIES)
	$(SHELL) $(srcdir)/bench/wait-watchdogs.sh
	MEMTRACK_PLUGIN_PATH='$(abs_top_builddir)/plugins/.libs' \
		bench/bench-write$(EXEEXT)
	MEMTRACK_PLUGIN_PATH='$(abs_top_builddir)/plugins/.libs' \
		$(SHELL) $(srcdir)/bench/bench-replay.sh '$(abs_top_builddir)'
include bench/report.mk
