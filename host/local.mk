# host: the recorder. A convenience library (so tests link the same code)
# and the memtrack program, whose main() also dispatches to report/.
noinst_LTLIBRARIES += host/libmthost.la
host_libmthost_la_SOURCES = \
	host/log.c host/log.h \
	host/host.c host/host.h \
	host/plugin.c host/plugin.h \
	host/elf-check.c host/elf-check.h \
	host/pipeline.c host/pipeline.h \
	host/spawn.c host/spawn.h \
	host/attach.c host/attach.h \
	host/command-env.c host/command-env.h \
	host/control.c host/control.h \
	host/witness.c host/witness.h \
	host/input-guard.c host/input-guard.h \
	host/run.c host/run.h \
	host/source-args.c host/source-args.h \
	host/source-auto.c host/source-auto.h \
	host/stats.c host/stats.h \
	common/open-output.c common/open-output.h \
	common/bpf-check.c common/bpf-check.h
host_libmthost_la_LIBADD = $(PTHREAD_LIBS) -ldl

bin_PROGRAMS += memtrack
memtrack_SOURCES = host/main.c
memtrack_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/report
memtrack_LDADD = report/libmtreport.la host/libmthost.la
