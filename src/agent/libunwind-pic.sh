#!/bin/sh
# libunwind-pic.sh: build the libunwind the agent links privately.
#   sh src/agent/libunwind-pic.sh PREFIX
# Fetches Debian's source package of libunwind (the version of the installed
# libunwind-dev, else apt's candidate) and builds it as a static library of
# position-independent objects with hidden visibility, local unwinding only
# (no ptrace, coredump or setjmp parts, no LZMA or zlib debug info: the agent
# unwinds with .eh_frame and needs no symbol names), into PREFIX/lib/libunwind.a
# and PREFIX/include. Debian's own libunwind.a cannot serve: its objects are not
# position-independent (R_X86_64_32 relocations in .text), so they cannot be
# linked into a shared object. configure's --with-agent-libunwind=PREFIX reads
# the result. Needs apt-get (no deb-src entry is needed: one is made for this
# run only), dpkg-source and a C compiler; run as the user who may write PREFIX.
set -e
prefix=${1:?usage: sh src/agent/libunwind-pic.sh PREFIX}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"    # apt downloads as its own user

# The source list: deb-src lines for the suites of the machine's Debian
# sources (sources.list lines and deb822 .sources stanzas), in lists of our own.
mkdir -p "$work/lists/partial" "$work/parts"
{
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		sed -n 's/^deb \(\[[^]]*\] \)\{0,1\}\([^ ]*\) \([^ ]*\) .*/deb-src \1\2 \3 main/p' "$f"
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk 'BEGIN { RS = ""; FS = "\n" }
		{
			types = uris = suites = signed = ""
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^Types:/) types = $i
				else if ($i ~ /^URIs:/) { uris = $i; sub(/^URIs: */, "", uris) }
				else if ($i ~ /^Suites:/) { suites = $i; sub(/^Suites: */, "", suites) }
				else if ($i ~ /^Signed-By:/) { signed = $i; sub(/^Signed-By: */, "", signed) }
			}
			if (types !~ /deb/ || uris == "") next
			n = split(uris, u, " "); m = split(suites, s, " ")
			for (a = 1; a <= n; a++) for (b = 1; b <= m; b++)
				printf "deb-src %s%s %s main\n", signed != "" ? "[signed-by=" signed "] " : "", u[a], s[b]
		}' "$f"
	done
} | sort -u > "$work/parts/src.list"
if ! [ -s "$work/parts/src.list" ]; then
	echo "libunwind-pic: no Debian source found in /etc/apt to fetch libunwind's from" >&2
	exit 1
fi
apt() {
	apt-get -q -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$work/parts" \
		-o Dir::State::Lists="$work/lists" "$@"
}
# (a source that fails, a third party's without sources, does not stop the
# fetch: apt source says so if Debian's failed too)
apt update > "$work/update.log" 2>&1 || true

v=$(dpkg-query -W -f='${Version}' libunwind-dev 2>/dev/null || true)
(cd "$work" && apt source --download-only "libunwind${v:+=$v}" > "$work/source.log" 2>&1) ||
	{ cat "$work/update.log" "$work/source.log" >&2; exit 1; }
(cd "$work" && dpkg-source -x libunwind_*.dsc src > "$work/extract.log" 2>&1) ||
	{ cat "$work/extract.log" >&2; exit 1; }

cd "$work/src"
echo "libunwind-pic: building libunwind ${v:-(apt's candidate)} into $prefix"
./configure -q --prefix="$prefix" --disable-shared --enable-static --with-pic \
	--disable-minidebuginfo --disable-zlibdebuginfo --disable-coredump --disable-ptrace \
	--disable-setjmp --disable-tests --disable-documentation --disable-cxx-exceptions \
	--disable-weak-backtrace CFLAGS='-O2 -g -fvisibility=hidden' > "$work/configure.log" 2>&1 ||
	{ tail -n 30 "$work/configure.log" >&2; exit 1; }
make -s -j"$(nproc 2>/dev/null || echo 2)" > "$work/make.log" 2>&1 || { tail -n 30 "$work/make.log" >&2; exit 1; }
mkdir -p "$(dirname "$prefix")"
rm -rf "$prefix.new"
make -s install prefix="$prefix.new" > "$work/install.log" 2>&1 || { tail -n 30 "$work/install.log" >&2; exit 1; }
rm -rf "$prefix"
mv "$prefix.new" "$prefix"
