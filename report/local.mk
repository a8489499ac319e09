# report: the offline analysis ('memtrack report', 'dump', '--diff'), a
# library of its own over the host's plugin services (it decodes files
# through the encoder plugin).
noinst_LTLIBRARIES += report/libmtreport.la
report_libmtreport_la_SOURCES = \
	report/dump.c report/dump.h \
	report/report.c report/report.h \
	report/report-analyze.h report/report-map.h report/report-model.h \
	report/report-run.c report/report-text.c report/report-json.c \
	report/report-flame.c report/report-svg.c report/report-html.c \
	report/report-diff.c report/report-pipe.c report/report-sites.c \
	report/report-pprof.c report/report-escape.c \
	report/report-wrappers.c report/report-stack-lines.c \
	report/report-attach.c report/report-attach.h \
	report/symbolize.c report/symbolize.h \
	report/sym-dwarf.c report/sym-dwarf.h \
	report/sym-maps.c report/sym-maps.h
# pprof's profile.proto, compiled by protoc-c at build time (the generated
# code must match the installed libprotobuf-c)
nodist_report_libmtreport_la_SOURCES = report/report-html.js.h \
	report/profile.pb-c.c report/profile.pb-c.h
BUILT_SOURCES += report/profile.pb-c.c report/profile.pb-c.h
CLEANFILES += report/profile.pb-c.c report/profile.pb-c.h
EXTRA_DIST += report/profile.proto
report/profile.pb-c.c report/profile.pb-c.h: report/profile.pb-c.stamp
report/profile.pb-c.stamp: $(srcdir)/report/profile.proto
	$(AM_V_GEN)$(MKDIR_P) report && \
	$(PROTOC_C) --proto_path=$(srcdir)/report \
		--c_out=report $(srcdir)/report/profile.proto && \
	touch $@
CLEANFILES += report/profile.pb-c.stamp
report_libmtreport_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/host \
	-I$(top_builddir)/report
report_libmtreport_la_CFLAGS = $(AM_CFLAGS) $(LIBELF_CFLAGS) \
	$(LIBDW_CFLAGS) $(PROTOBUF_C_CFLAGS) $(ZLIB_CFLAGS)
report_libmtreport_la_LIBADD = common/libmtcommon.la host/libmthost.la \
	$(LIBELF_LIBS) $(LIBDW_LIBS) $(PROTOBUF_C_LIBS) $(ZLIB_LIBS) -lm

# the html page's script, written as JavaScript, included as a C string
BUILT_SOURCES += report/report-html.js.h
CLEANFILES += report/report-html.js.h
# also for targets other than all and check
$(report_libmtreport_la_OBJECTS): report/report-html.js.h
EXTRA_DIST += report/report-html.js
report/report-html.js.h: report/report-html.js
	$(AM_V_GEN)$(MKDIR_P) report && \
	sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' \
		$(srcdir)/report/report-html.js >$@.tmp && mv $@.tmp $@
