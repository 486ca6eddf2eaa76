#!/bin/sh
# man/top-screenshot.sh: remakes man/top-demo.png, the README's picture of
# memwatch top: the demo service under top in a 120x20 tmux, its screen after
# 14 s captured with its attributes (capture-pane -e), as Pango markup (DejaVu
# Sans Mono, bold and reverse video kept) drawn by ImageMagick's convert.
#
#   man/top-screenshot.sh [BUILDDIR]   (a built tree; default .)
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-.}" && pwd)
for f in "$build/memwatch" "$build/.libs/libmemwatch-agent.so" "$build/tests/targets/demo"; do
	[ -e "$f" ] || { echo "man/top-screenshot.sh: $f is missing (make check in $build first)" >&2; exit 1; }
done
for c in tmux convert python3; do
	command -v "$c" >/dev/null 2>&1 || { echo "man/top-screenshot.sh: $c is needed" >&2; exit 1; }
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/memwatch-shot.XXXXXX")
sock=$dir/tmux.sock
demo=
trap 'tmux -S "$sock" kill-server 2>/dev/null; [ -n "$demo" ] && kill "$demo" 2>/dev/null; rm -rf "$dir"' EXIT
cd "$dir" || exit 1
export MEMWATCH_AGENT="$build/.libs/libmemwatch-agent.so"

# started from the build directory: the screen names it ./tests/targets/demo
(cd "$build" && exec ./tests/targets/demo 60) >demo.out 2>&1 &
demo=$!
sleep 1
tmux -f /dev/null -S "$sock" new-session -d -s top -x 120 -y 20 \
	"'$build/memwatch' top -p $demo -i 1s --capture now --no-report -o top.log 2>top.err; sleep 600"
sleep 14
tmux -S "$sock" capture-pane -e -p -t top >pane.ansi
tmux -S "$sock" send-keys -t top q

python3 - pane.ansi top.pango <<'PY'
# The screen (text with SGR escapes: bold, reverse, reset) as Pango markup.
import re, sys
from xml.sax.saxutils import escape

BG, FG, COLS = "#1d1f21", "#d8d8d8", 120
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
while lines and lines[-1] == "":
    lines.pop()
bold = rev = False
out = []
for line in lines:
    text, n = "", 0
    for tok in re.split(r"(\x1b\[[0-9;]*m)", line):
        if tok.startswith("\x1b["):
            for c in (tok[2:-1] or "0").split(";"):
                c = int(c or 0)
                bold = False if c in (0, 22) else True if c == 1 else bold
                rev = False if c in (0, 27) else True if c == 7 else rev
            continue
        if not tok:
            continue
        n += len(tok)
        text += '<span%s%s>%s</span>' % (' weight="bold"' if bold else "",
                                         ' foreground="%s" background="%s"' % (BG, FG) if rev else "",
                                         escape(tok))
    if rev and n < COLS:   # reverse video runs to the end of the line
        text += '<span foreground="%s" background="%s">%s</span>' % (BG, FG, " " * (COLS - n))
    out.append(text)
open(sys.argv[2], "w", encoding="utf-8").write(
    '<span font="DejaVu Sans Mono 11" foreground="%s">%s</span>' % (FG, "\n".join(out)))
PY
convert -background '#1d1f21' "pango:$(cat top.pango)" -bordercolor '#1d1f21' -border 10 \
	"$src/man/top-demo.png" || exit 1
echo "man/top-demo.png: $(head -n 1 pane.ansi | sed 's/\x1b\[[0-9;]*m//g' | cut -c1-60)"
