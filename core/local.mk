# The host: a convenience library (so tests link the same code) and the
# memtrack program.
noinst_LTLIBRARIES += core/libmtcore.la
core_libmtcore_la_SOURCES = \
	core/log.c core/log.h \
	core/host.c core/host.h \
	core/plugin.c core/plugin.h \
	core/pipeline.c core/pipeline.h \
	core/spawn.c core/spawn.h \
	core/command-env.c core/command-env.h \
	core/control.c core/control.h \
	core/dump.c core/dump.h \
	core/report.c core/report.h \
	core/report-analyze.h core/report-map.h core/report-model.h \
	core/report-run.c core/report-text.c core/report-json.c \
	core/report-flame.c core/report-svg.c core/report-html.c \
	core/report-diff.c core/report-pipe.c \
	core/symbolize.c core/symbolize.h \
	core/elf-build-id.c core/elf-build-id.h \
	core/run.c core/run.h \
	core/stats.c core/stats.h
core_libmtcore_la_CFLAGS = $(AM_CFLAGS) $(LIBELF_CFLAGS)
core_libmtcore_la_LIBADD = $(PTHREAD_LIBS) $(LIBELF_LIBS) -ldl

bin_PROGRAMS += memtrack
memtrack_SOURCES = core/main.c
memtrack_LDADD = core/libmtcore.la
