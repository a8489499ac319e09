# bench/report.mk: 'memtrack report' on a 10M-event trace against its 2 s
# goal. Hooked into 'make bench' as a prerequisite (bench/local.mk owns the
# recipe), and runnable alone as 'make bench-report'.
EXTRA_PROGRAMS += bench/bench-report-gen
bench_bench_report_gen_SOURCES = bench/bench-report-gen.c
bench_bench_report_gen_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)
bench_bench_report_gen_CFLAGS = $(AM_CFLAGS) $(LIBELF_CFLAGS)
bench_bench_report_gen_LDADD = host/libmthost.la common/libmtcommon.la \
	$(LIBELF_LIBS)
EXTRA_DIST += bench/bench-report.sh

.PHONY: bench-report
bench-report: bench/bench-report-gen$(EXEEXT) memtrack$(EXEEXT) $(plugin_LTLIBRARIES)
	MEMTRACK_PLUGIN_PATH='$(abs_top_builddir)/plugins/.libs' \
		$(SHELL) $(srcdir)/bench/bench-report.sh '$(abs_top_builddir)'
bench: bench-report

# Issue 29's goal: every format of 20M events with 20000 call stacks in at
# most 15 s each (not part of 'make bench': it takes minutes).
.PHONY: bench-report-stacks
bench-report-stacks: bench/bench-report-gen$(EXEEXT) memtrack$(EXEEXT) $(plugin_LTLIBRARIES)
	BENCH_REPORT_STACKS=$${BENCH_REPORT_STACKS:-20000} \
	MEMTRACK_PLUGIN_PATH='$(abs_top_builddir)/plugins/.libs' \
		$(SHELL) $(srcdir)/bench/bench-report.sh '$(abs_top_builddir)'
