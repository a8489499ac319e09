# bench/report.mk: 'memtrack report' on a 10M-event trace against its 2 s
# goal. Hooked into 'make bench' as a prerequisite (bench/local.mk owns the
# recipe), and runnable alone as 'make bench-report'.
EXTRA_PROGRAMS += bench/bench-report-gen
bench_bench_report_gen_SOURCES = bench/bench-report-gen.c
bench_bench_report_gen_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)
bench_bench_report_gen_LDADD = host/libmthost.la
EXTRA_DIST += bench/bench-report.sh

.PHONY: bench-report
bench-report: bench/bench-report-gen$(EXEEXT) memtrack$(EXEEXT) $(plugin_LTLIBRARIES)
	MEMTRACK_PLUGIN_PATH='$(abs_top_builddir)/plugins/.libs' \
		$(SHELL) $(srcdir)/bench/bench-report.sh '$(abs_top_builddir)'
bench: bench-report
