#!/bin/bash
# e2e: the SVG from `profctl render` works in a real browser.  A harness
# page embeds it, drives search, click-zoom, reset, hover and invert with
# real DOM events in headless chromium, and writes what it saw into the
# page; --dump-dom prints the page and this script checks the results.
# Needs no BPF and no root, only chromium (skipped when absent).
set -u

BUILD=${BUILD:?BUILD must point at the build directory}
PROFCTL=$BUILD/profctl
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

if [ ! -x "$CHROMIUM" ]; then
	echo "SKIP: $CHROMIUM not found; install it with: apt-get install -y chromium"
	exit 77
fi
[ -x "$PROFCTL" ] || fail "$PROFCTL not built"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A small mixed profile: 1000 samples, every kind of frame name.
cat >"$tmp/profile.folded" <<'EOF'
main (/srv/app.py:10);compute (/srv/app.py:20);numpy_dot 300
main (/srv/app.py:10);compute (/srv/app.py:20);PyObject_Free 100
main (/srv/app.py:10);io_wait (/srv/app.py:30);__libc_read;entry_SYSCALL_64_[k];ksys_read_[k] 120
main (/srv/app.py:10);io_wait (/srv/app.py:30);__libc_read;entry_SYSCALL_64_[k];schedule_[k] 80
main (/srv/app.py:10);io_wait (/srv/app.py:30) 100
main (/srv/app.py:10);[libfoo.so+0x1a2b] 50
gc_collect;compute_helper 250
EOF

# Share of samples in stacks with a frame matching $1 (an ERE that means
# the same in JavaScript): what "Matched" must show, nested matches once.
expected_share() {
	awk -v re="$1" '{
		n = $NF; total += n
		stack = $0; sub(/[ \t]+[0-9]+$/, "", stack)
		k = split(stack, f, ";")
		for (i = 1; i <= k; i++) if (f[i] ~ re) { hit += n; break }
	} END { printf "%.2f", 100 * hit / total }' "$tmp/profile.folded"
}
SEARCH='compute|numpy'
want_matched=$(expected_share "$SEARCH")

"$PROFCTL" render -i "$tmp/profile.folded" -o "$tmp/fg.svg" --title "e2e flamegraph" ||
	fail "profctl render exited $?"
grep -q '<svg' "$tmp/fg.svg" || fail "profctl render wrote no SVG"

cat >"$tmp/harness.html" <<EOF
<!DOCTYPE html>
<html><body>
<object id="fg" data="fg.svg" type="image/svg+xml" width="1200" height="400"></object>
<pre id="results">pending</pre>
<script>
var out = [];
function log(k, v) { out.push(k + '=' + v); }
function finish() { document.getElementById('results').textContent = out.join('\n') + '\nend=1'; }
function run(obj) {
	var win = obj.contentWindow, doc = obj.contentDocument, p = win.profd;
	log('api', typeof p);
	if (!p)
		return;
	// Real events: find the element under the frame's centre, as a user would.
	function at(i) {
		var r = doc.querySelectorAll('#frames > g')[i].querySelector('rect').getBoundingClientRect();
		return doc.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
	}
	function mouse(el, type) {
		var r = el.getBoundingClientRect();
		el.dispatchEvent(new win.MouseEvent(type, { bubbles: true, cancelable: true, view: win,
			clientX: r.x + r.width / 2, clientY: r.y + r.height / 2 }));
	}
	var compute = p.find('compute (/srv/app.py:20)'), io = p.find('io_wait (/srv/app.py:30)');
	var main = p.find('main (/srv/app.py:10)'), dot = p.find('numpy_dot');
	var root = p.find('all');
	log('nodes', p.count());
	log('found', [compute, io, main, dot, root].every(function (i) { return i >= 0; }));

	log('matched', p.search('$SEARCH').toFixed(2));
	log('matchedText', doc.getElementById('matched').textContent);
	log('highlighted', doc.querySelectorAll('#frames g.hl').length);
	win.dispatchEvent(new win.KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
	log('afterEsc', p.matched() + ' ' + doc.querySelectorAll('#frames g.hl').length);
	// Ctrl-F and the Search button ask for the expression with prompt().
	win.prompt = function () { return 'numpy_dot'; };
	win.dispatchEvent(new win.KeyboardEvent('keydown', { key: 'f', ctrlKey: true, bubbles: true }));
	log('ctrlF', p.matched() === null ? 'null' : p.matched().toFixed(2));
	win.prompt = function () { return '^io_wait'; };
	mouse(doc.getElementById('search'), 'click');
	log('searchButton', p.matched() === null ? 'null' : p.matched().toFixed(2));
	mouse(doc.getElementById('unsearch'), 'click');
	log('resetSearch', p.matched() + ' ' + doc.getElementById('matched').classList.contains('hide'));

	log('hit', at(compute).parentNode === doc.querySelectorAll('#frames > g')[compute]);
	log('widthBefore', p.info(compute).width.toFixed(2));
	mouse(at(compute), 'click');
	log('zoomWidth', p.info(compute).width.toFixed(2));
	log('zoomX', p.info(compute).x.toFixed(2));
	log('childWidth', p.info(dot).width.toFixed(2));
	log('siblingHidden', p.info(io).hidden);
	log('ancestorDimmed', p.info(main).dimmed + ' ' + p.info(root).dimmed);
	log('unzoomShown', !doc.getElementById('unzoom').classList.contains('hide'));
	mouse(doc.getElementById('unzoom'), 'click');
	log('resetWidth', p.info(compute).width.toFixed(2));
	log('resetSibling', p.info(io).hidden + ' ' + p.info(main).dimmed);

	mouse(at(dot), 'mouseover');
	log('tooltip', doc.getElementById('details').textContent);

	var yRoot = p.info(root), yDot = p.info(dot);
	p.invert();
	log('inverted', (p.info(root).x === yRoot.x) + ' ' +
		(Number(doc.querySelectorAll('#frames > g')[root].querySelector('rect').getAttribute('y')) <
		 Number(doc.querySelectorAll('#frames > g')[dot].querySelector('rect').getAttribute('y'))));
}
document.getElementById('fg').addEventListener('load', function () {
	try { run(this); } catch (e) { log('error', e); }
	finish();
});
</script>
</body></html>
EOF

chrome() {
	timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--allow-file-access-from-files --user-data-dir="$(mktemp -d "$tmp/profile.XXXXXX")" "$@"
}

chrome --virtual-time-budget=10000 --dump-dom "file://$tmp/harness.html" \
	>"$tmp/dom.html" 2>"$tmp/chromium.log" || {
	cat "$tmp/chromium.log" >&2
	fail "chromium --dump-dom failed"
}
results=$(sed -n '/<pre id="results">/,/end=1/p' "$tmp/dom.html")
echo "$results"
grep -q 'end=1' <<<"$results" || fail "the harness did not finish (see the DOM above)"

expect() {
	grep -qxF -- "$1" <<<"$(sed 's/^<pre id="results">//' <<<"$results")" || fail "expected '$1': $2"
}
expect "api=object" "window.profd missing in the SVG"
expect "found=true" "frames from the folded file not in the SVG"
expect "matched=$want_matched" "search share differs from the folded counts"
expect "matchedText=Matched: $want_matched%" "Matched label wrong"
expect "highlighted=3" "compute, numpy_dot and compute_helper should be highlighted"
expect "afterEsc=null 0" "Escape did not reset the search"
expect "ctrlF=$(expected_share numpy_dot)" "Ctrl-F did not search"
expect "searchButton=$(expected_share '^io_wait')" "the Search button did not search"
expect "resetSearch=null true" "Reset Search did not clear the search"
expect "hit=true" "the frame's rect is not what a click at its centre hits"
expect "widthBefore=472.00" "compute should be 40% of 1180 px"
expect "zoomWidth=1180.00" "click did not zoom the frame to full width"
expect "zoomX=10.00" "zoomed frame does not start at the left edge"
expect "childWidth=885.00" "numpy_dot should fill 300/400 of the zoomed width"
expect "siblingHidden=true" "sibling io_wait should be hidden when zoomed"
expect "ancestorDimmed=true true" "ancestors should be dimmed"
expect "unzoomShown=true" "Reset Zoom should appear"
expect "resetWidth=472.00" "Reset Zoom did not restore the width"
expect "resetSibling=false false" "Reset Zoom did not restore the view"
grep -q '^tooltip=numpy_dot .*300 samples (30.00%)' <<<"$results" ||
	fail "hover status should show name, samples and percent"
expect "inverted=true true" "invert did not put the root on top"

# The first screen shows the profile: a 150-deep stack (PyTorch's imports
# make such) opens, in a 1280x800 window, on its root and widest frames
# rather than on the empty space above a deep flame, where only the thin
# deep chain is.  --flame keeps the old layout, whose first screen holds
# none of the wide frames: the check below tells the two apart.
awk 'BEGIN {
	s = "main"; for (i = 1; i < 150; i++) s = s ";importer_" i
	print s " 100"; print "main;compute;inner_loop 900"
}' >"$tmp/deep.folded"
"$PROFCTL" render -i "$tmp/deep.folded" -o "$tmp/deep.svg" || fail "render of the deep profile failed"
"$PROFCTL" render --flame -i "$tmp/deep.folded" -o "$tmp/deep_flame.svg" || fail "render --flame failed"
first_screen() {
	cat >"$tmp/first.html" <<EOF2
<!DOCTYPE html>
<html><body style="margin:0">
<iframe id="w" src="$1" style="width:1280px;height:800px;border:0"></iframe>
<pre id="results">pending</pre>
<script>
document.getElementById('w').addEventListener('load', function () {
	var win = this.contentWindow, doc = this.contentDocument, out = [];
	var seen = 0, wide = 0, root = false;
	doc.querySelectorAll('#frames > g').forEach(function (g) {
		var r = g.querySelector('rect').getBoundingClientRect();
		if (r.bottom <= 0 || r.top >= win.innerHeight || r.width < 1)
			return;
		seen++;
		if (r.width > 600) wide++;
		if (g.textContent.indexOf('all') === 0) root = true;
	});
	out.push('seen=' + seen, 'wide=' + wide, 'root=' + root);
	document.getElementById('results').textContent = out.join(' ') + ' end=1';
});
</script>
</body></html>
EOF2
	chrome --virtual-time-budget=5000 --window-size=1300,900 --dump-dom "file://$tmp/first.html" \
		2>>"$tmp/chromium.log" | sed -n 's/.*<pre id="results">\(.*end=1\)<\/pre>.*/\1/p'
}
deep=$(first_screen deep.svg)
flame=$(first_screen deep_flame.svg)
echo "first screen, default: $deep; --flame: $flame"
[[ "$deep" =~ seen=([0-9]+)\ wide=([0-9]+)\ root=true ]] ||
	fail "the deep profile's root is not on the first screen: '$deep'"
[ "${BASH_REMATCH[1]}" -ge 40 ] && [ "${BASH_REMATCH[2]}" -ge 4 ] ||
	fail "the deep profile's first screen misses its frames: '$deep'"
[[ "$flame" =~ wide=0\ root=false ]] ||
	fail "with --flame the first screen should hold only the thin deep chain: '$flame'"

# A picture for people: the screenshot must exist and not be blank.
shot_dir="$BUILD/tests/tmp"
mkdir -p "$shot_dir"
chrome --screenshot="$shot_dir/svg_browser.png" --window-size=1300,800 \
	"file://$tmp/fg.svg" >/dev/null 2>>"$tmp/chromium.log" || fail "screenshot failed"
chrome --screenshot="$shot_dir/svg_deep_first_screen.png" --window-size=1280,800 \
	"file://$tmp/deep.svg" >/dev/null 2>>"$tmp/chromium.log" || fail "screenshot failed"
[ "$(stat -c %s "$shot_dir/svg_browser.png")" -gt 10000 ] || fail "screenshot is suspiciously small"
echo "PASS (screenshot: $shot_dir/svg_browser.png)"
