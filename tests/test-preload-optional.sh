#!/bin/sh
# The optional allocators' hooks, which the interposer does not export but
# binds into the GOT of each object that binds their names
# (plugins/preload/interposer/optional.c), still record every call:
#   dlopen      a library linked to mimalloc, opened with dlopen after
#               start-up (the exported dlopen marks the objects dirty),
#               built lazy and with -z now (its GOT in RELRO)
#   default     the same library opened RTLD_GLOBAL, mi_malloc and
#               mi_free called through dlsym(RTLD_DEFAULT, ...) pointers
#   bind-now    alloc-mimalloc, lazy and with LD_BIND_NOW=1 (every entry
#               bound before the interposer looks, none a lazy stub)
# Needs libmimalloc (Debian's libmimalloc-dev); skipped without it, unless
# every test is required (MEMTRACK_REQUIRE_BPF=1, CI).
set -u

: "${MT_BUILDDIR:?}" "${MT_SRCDIR:?}"
. "$MT_SRCDIR/tests/lib.sh"

P="$MT_BUILDDIR/tests/progs"
if [ ! -e "$P/dl-mimalloc-lazy.so" ] || [ ! -e "$P/alloc-mimalloc" ]; then
	if [ "${MEMTRACK_REQUIRE_BPF:-0}" = 1 ]; then
		fail "libmimalloc is missing (the quickstart installs it)"
		finish
	fi
	echo "SKIP: libmimalloc is not installed"
	exit 77
fi

# count FILE TYPE SIZE: records of TYPE and SIZE in FILE
count() {
	"$MT" dump "$1" | grep -c "\"type\":\"$2\".*\"size\":$3[,}]"
}

for kind in lazy now; do
	expect_exit 0 "dlopen ($kind): exit 0" -- timeout 60 "$MT" -q \
		--source preload --sink "file:$T/dl-$kind.mt" -- \
		"$P/dl-optional" "$P/dl-mimalloc-$kind.so" 100
	n=$(count "$T/dl-$kind.mt" Malloc 77777)
	[ "$n" -eq 100 ] && ok "dlopen ($kind): 100 mi_malloc recorded" ||
		fail "dlopen ($kind): $n mi_malloc recorded, want 100"
	n=$("$MT" dump "$T/dl-$kind.mt" | grep -c '"type":"Free"')
	[ "$n" -ge 100 ] && ok "dlopen ($kind): the mi_free calls too" ||
		fail "dlopen ($kind): $n frees recorded, want 100 or more"
done

expect_exit 0 "default: exit 0" -- timeout 60 "$MT" -q --source preload \
	--sink "file:$T/df.mt" -- "$P/dl-optional" "$P/dl-mimalloc-lazy.so" 100 \
	default
n=$(count "$T/df.mt" Malloc 77777)
[ "$n" -eq 100 ] && ok "default: 100 mi_malloc recorded" ||
	fail "default: $n mi_malloc recorded, want 100"

# what alloc-mimalloc reports it did, against what was recorded, lazy and
# bound at start-up
for env in "" "LD_BIND_NOW=1"; do
	what="bind-now (${env:-lazy})"
	# shellcheck disable=SC2086
	expect_exit 0 "$what: exit 0" -- timeout 60 env $env "$MT" -q \
		--source preload --sink "file:$T/bn.mt" -- "$P/alloc-mimalloc"
	n=$(count "$T/bn.mt" Malloc 60001)
	[ "$n" -eq 1 ] && ok "$what: mi_malloc(60001) recorded" ||
		fail "$what: mi_malloc(60001) recorded $n times"
	n=$(count "$T/bn.mt" Calloc 60005)
	[ "$n" -eq 1 ] && ok "$what: mi_zalloc(60005) recorded" ||
		fail "$what: mi_zalloc(60005) recorded $n times"
done

finish
