# plugins/preload/stacks.mk: the preload interposer's call stacks
# (in-process unwinding, the stack table, the mappings), a convenience
# library the interposer links. Compiled PIC (libtool), hidden: nothing of
# it is exported from the interposer.
noinst_LTLIBRARIES += plugins/preload/libmtpl-stacks.la
plugins_preload_libmtpl_stacks_la_SOURCES = \
	plugins/preload/stack-unwind.c plugins/preload/stack-unwind.h \
	plugins/preload/stack-table.c plugins/preload/stack-table.h \
	plugins/preload/stack-maps.c plugins/preload/stack-maps.h \
	plugins/preload/selfmap.h
plugins_preload_libmtpl_stacks_la_CFLAGS = $(AM_CFLAGS) $(LIBUNWIND_CFLAGS) \
	-fvisibility=hidden
# libunwind itself is opened with dlopen (stack-unwind.c says why)
plugins_preload_libmtpl_stacks_la_LIBADD = -ldl
