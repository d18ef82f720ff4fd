package facts

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
)

// A pod-side MTU sweep is one shell script: it reads the interface MTU, starts one
// Don't-Fragment ping per size in the background (they run at once, so a silent size costs
// one probe limit, not one per size), and tags every line a ping prints with its size:
//
//	@@mtu 1500
//	@@1500 PING 10.8.0.2 (10.8.0.2) 1472(1500) bytes of data.
//	@@84 1 packets transmitted, 1 received, 0% packet loss, time 0ms
//	@@84 exit 0
//	@@end
//
// Lines of different sizes interleave; each is one short write, so a line is whole. A size
// without its "exit" line did not finish (the exec's deadline cut it) and is left out: unknown,
// not silent.

// pingSweepTextCap bounds what is kept of one size's output (a ping of one packet prints five
// lines).
const pingSweepTextCap = 2048

// pingSweepScript is the sweep of addr as one `sh -c` script. With iface it reads
// /sys/class/net/IFACE/mtu first and probes the fixed sweep up to it and the MTU itself; without,
// it probes sizes. iface must be a valid interface name (linuxnet.ValidInterfaceName) and sizes
// numbers the sweep chose: nothing else reaches the script.
func pingSweepScript(iface string, addr netip.Addr, sizes []int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `p() { o=$(ping -M do -s $(($1-28)) -c 1 -W %s %s 2>&1); c=$?; `+
		`printf '%%s\n' "$o" | while IFS= read -r l; do printf '@@%%s %%s\n' "$1" "$l"; done; echo "@@$1 exit $c"; }; `,
		secs(mtuProbeLimit), addr)
	if iface != "" {
		fixed := strings.Trim(fmt.Sprint(mtuSweep), "[]")
		fmt.Fprintf(&b, `f=$(cat /sys/class/net/%s/mtu) || exit 3; case $f in ''|*[!0-9]*) exit 3;; esac; `+
			`[ "$f" -ge 576 ] && [ "$f" -le 65535 ] || exit 3; echo "@@mtu $f"; `+
			`for s in %s; do [ "$s" -le "$f" ] && p "$s" & done; case " %s " in *" $f "*) ;; *) p "$f" & ;; esac; `,
			iface, fixed, fixed)
	}
	for _, size := range sizes {
		fmt.Fprintf(&b, "p %d & ", size)
	}
	b.WriteString("wait; echo @@end")
	return b.String()
}

// pingSweep is what one sweep exec printed.
type pingSweep struct {
	mtu  int            // the interface MTU it read (0: none)
	text map[int]string // each size's output
	exit map[int]int    // each finished size's exit code
	// ended: the script ran to its end.
	ended  bool
	err    error
	errOut string
}

// parsePingSweep reads a sweep script's output. Only sizes it asked for count: sizes, or
// without them the fixed sweep up to the MTU read and that MTU. The output is the pod's: a line
// that is not the script's is ignored, each size's text is bounded, a size reported twice keeps
// its first exit code.
func parsePingSweep(out string, sizes []int) pingSweep {
	sw := pingSweep{text: map[int]string{}, exit: map[int]int{}}
	asked := slices.Clone(sizes)
	if sizes == nil {
		if sw.mtu = sweepMTULine(out); sw.mtu == 0 {
			return sw
		}
		asked = sweepSizes(sw.mtu)
	}
	for line := range strings.SplitSeq(out, "\n") {
		if strings.TrimSpace(line) == "@@end" {
			sw.ended = true
			continue
		}
		rest, ok := strings.CutPrefix(line, "@@")
		if !ok {
			continue
		}
		tag, text, _ := strings.Cut(rest, " ")
		if size, err := strconv.Atoi(tag); err == nil && slices.Contains(asked, size) {
			sw.add(size, text)
		}
	}
	return sw
}

// sweepMTULine is the MTU of the output's first "@@mtu" line, 0 when none is in range.
func sweepMTULine(out string) int {
	for line := range strings.SplitSeq(out, "\n") {
		if v, ok := strings.CutPrefix(line, "@@mtu "); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 576 && n <= 65535 {
				return n
			}
			return 0 // the first MTU line only
		}
	}
	return 0
}

// add reads one line of size's: its exit code (the first one counts), or its output (bounded).
func (sw *pingSweep) add(size int, text string) {
	if v, ok := strings.CutPrefix(text, "exit "); ok {
		if code, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && code >= 0 && code <= 255 {
			if _, seen := sw.exit[size]; !seen {
				sw.exit[size] = code
			}
			return
		}
	}
	if len(sw.text[size])+len(text) < pingSweepTextCap {
		sw.text[size] += text + "\n"
	}
}

// results are sizes judged as one ping each, in their order; a size that did not finish has
// no State (unknown).
func (sw pingSweep) results(sizes []int) []SizeResult {
	out := make([]SizeResult, 0, len(sizes))
	for _, size := range sizes {
		code, ok := sw.exit[size]
		if !ok {
			out = append(out, SizeResult{Size: size})
			continue
		}
		var err error
		if code != 0 {
			err = &podexec.ExitError{Code: code}
		}
		out = append(out, pingSizeResult(size, sw.text[size], err))
	}
	return out
}

// noDF says that this ping cannot send Don't-Fragment probes ("" when it can).
func (sw pingSweep) noDF() string {
	for _, text := range sw.text {
		if o := strings.ToLower(text); strings.Contains(o, "invalid option") || strings.Contains(o, "unrecognized option") {
			return "this ping cannot set Don't Fragment (-M do): " + firstLine(o)
		}
	}
	return ""
}

// unmeasured says why the sweep measured nothing: a ping without -M do, or an exec that
// failed before any size finished ("" when it measured).
func (sw pingSweep) unmeasured() string {
	if n := sw.noDF(); n != "" {
		return n
	}
	if len(sw.exit) == 0 && sw.err != nil {
		return "the sweep did not run: " + sweepErr(sw.errOut, sw.err)
	}
	return ""
}

// sweepErr is an exec's failure in one line: what it printed on stderr, else the error.
func sweepErr(errOut string, err error) string {
	if s := strings.TrimSpace(probeOutput(errOut, err)); s != "" {
		return firstLine(s)
	}
	if ee, ok := errors.AsType[*podexec.ExitError](err); ok {
		return "exit " + strconv.Itoa(ee.Code)
	}
	if err != nil {
		return err.Error()
	}
	return "no output"
}
