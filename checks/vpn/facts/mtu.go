package facts

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/pkg/linuxnet"
)

// A tunnel's MTU black hole answers small packets and drops large ones without a word: the
// encapsulated packet outgrows a link on the way, carries Don't Fragment, and the ICMP
// "fragmentation needed" that would tell the sender is filtered. Every hop that answered is
// probed with Don't-Fragment packets from the small one up to the sender's interface MTU. The
// sizes are a fixed sweep, not a bisection: on a real tunnel the largest sizes can pass again
// (the sender fragments an encapsulated packet that outgrows its own link, and fragments carry
// no DF), so what passes is not monotonic in the size.

// SizeState is what one probe size did.
type SizeState string

// The probe outcomes.
const (
	SizePassed SizeState = "passed"
	SizeSilent SizeState = "silent"
	// SizeTooBig: refused with a size the sender knows (its interface, or an ICMP
	// "fragmentation needed" the network sent): path MTU discovery works.
	SizeTooBig SizeState = "too big"
)

// SizeResult is one probe: the IP packet's size in bytes.
type SizeResult struct {
	Size   int
	State  SizeState
	MTU    int // the MTU a "too big" named
	Detail string
}

// MTUProbe is a hop's sweep.
type MTUProbe struct {
	// Full is the sender's interface MTU, the largest size tried; Sizes the probes in order.
	Full  int
	Sizes []SizeResult
	// Unmeasured says why the hop was not probed ("" when it was).
	Unmeasured string
}

// Largest is the largest size that passed below the first silent one (0: none passed).
func (m MTUProbe) Largest() int {
	first := m.FirstSilent()
	largest := 0
	for _, s := range m.Sizes {
		if s.State == SizePassed && (first == 0 || s.Size < first) && s.Size > largest {
			largest = s.Size
		}
	}
	return largest
}

// FirstSilent is the smallest size that vanished (0: none).
func (m MTUProbe) FirstSilent() int {
	first := 0
	for _, s := range m.Sizes {
		if s.State == SizeSilent && (first == 0 || s.Size < first) {
			first = s.Size
		}
	}
	return first
}

// BlackHole reports whether small packets pass and some larger one vanished.
func (m MTUProbe) BlackHole() bool { return m.Largest() > 0 && m.FirstSilent() > 0 }

// PassedAbove are the sizes that passed above the first silent one (the non-monotonic case).
func (m MTUProbe) PassedAbove() []int {
	first := m.FirstSilent()
	var out []int
	for _, s := range m.Sizes {
		if first > 0 && s.State == SizePassed && s.Size > first {
			out = append(out, s.Size)
		}
	}
	return out
}

// The sweep: a small packet, then sizes where tunnels' limits fall (576 the IPv4 minimum,
// 1280 IPv6's, encapsulation overheads below 1500), then the interface MTU; then, when small
// packets pass and a larger one vanished, one batch of at most mtuRefine sizes between the last
// size that passed and the first that vanished.
var mtuSweep = []int{84, 576, 1200, 1280, 1360, 1400, 1440}

const (
	// mtuRefine bounds the refining sizes: 9 evenly spaced sizes narrow the sweep's widest
	// gap (80 bytes) to 8 in one round trip, where the bisections they replace took four in a
	// row to get there.
	mtuRefine     = 9
	mtuRefineStep = 8
	mtuProbeLimit = time.Second
)

// sweepSizes are the fixed sweep's sizes up to full, and full itself, in sweep order.
func sweepSizes(full int) []int {
	var sizes []int
	for _, size := range append(slices.Clone(mtuSweep), full) {
		if size <= full && !slices.Contains(sizes, size) {
			sizes = append(sizes, size)
		}
	}
	return sizes
}

// refineSizes are at most mtuRefine evenly spaced sizes strictly between lo (passed) and hi
// (vanished), at least mtuRefineStep bytes apart; none when the gap is already that narrow.
func refineSizes(lo, hi int) []int {
	n := min(mtuRefine, (hi-lo)/mtuRefineStep-1)
	var sizes []int
	for k := 1; k <= n; k++ {
		if size := lo + k*(hi-lo)/(n+1); size > lo && size < hi && !slices.Contains(sizes, size) {
			sizes = append(sizes, size)
		}
	}
	return sizes
}

// sizeBatch probes sizes and returns one result per size, in the order of sizes (a result's
// Size may differ from the size asked: the client's smallest question is larger). A result
// without a State is a size it could not measure: unknown, not silent, and left out.
type sizeBatch func(sizes []int) []SizeResult

// sweepMTU probes the fixed sweep as one batch, and refines a black hole with one more:
// at most len(mtuSweep)+1+mtuRefine probes in two round trips. On a real tunnel what passes is
// not monotonic in the size, so every size of the sweep is sent, not a bisection.
func sweepMTU(full int, batch sizeBatch) MTUProbe {
	sizes := sweepSizes(full)
	if len(sizes) == 0 {
		return MTUProbe{Full: full}
	}
	return finishSweep(full, batch(sizes), batch)
}

// finishSweep judges the fixed sweep's results (one per sweepSizes(full)) and sends the
// refining batch.
func finishSweep(full int, first []SizeResult, refine sizeBatch) MTUProbe {
	m := MTUProbe{Full: full, Sizes: measured(first)}
	if len(first) > 0 && sweepSizes(full)[0] == mtuSweep[0] && first[0].State != SizePassed {
		m.Sizes = m.Sizes[:1] // the small packet did not pass: not an MTU question
		return m
	}
	if !m.BlackHole() {
		return m
	}
	if more := refineSizes(m.Largest(), m.FirstSilent()); len(more) > 0 {
		m.Sizes = append(m.Sizes, measured(refine(more))...)
	}
	return m
}

// measured drops the sizes a batch could not measure.
func measured(results []SizeResult) []SizeResult {
	return slices.DeleteFunc(slices.Clone(results), func(r SizeResult) bool { return r.State == "" })
}

// oneAtATime is a batch that sends its sizes one after the other with send. The client side
// sends this way: through a real OpenVPN 2.6 tunnel, padded questions sent at once came back
// silent or "too big" (mtu 1400) on a path that passes 1500 bytes, one at a time every size
// passed (facts/record_test.go, TestRecordMTU/mtu-ok, 2026-12-06).
func oneAtATime(send func(size int) SizeResult) sizeBatch {
	return func(sizes []int) []SizeResult {
		out := make([]SizeResult, 0, len(sizes))
		for _, size := range sizes {
			out = append(out, send(size))
		}
		return out
	}
}

// eachSize is a batch that sends every size at once with send (safe for concurrent use).
func eachSize(send func(size int) SizeResult) sizeBatch {
	return func(sizes []int) []SizeResult {
		out := make([]SizeResult, len(sizes))
		var wg sync.WaitGroup
		for i, size := range sizes {
			wg.Go(func() { out[i] = send(size) })
		}
		wg.Wait()
		return out
	}
}

// mtuReported reads the MTU a "too big" error names: ping's "local error: message too long,
// mtu=1500", "Frag needed and DF set (mtu = 1400)".
var mtuReported = regexp.MustCompile(`mtu ?= ?(\d+)`)

// pingSizeResult reads iputils ping's output for one Don't-Fragment probe.
func pingSizeResult(size int, out string, err error) SizeResult {
	o := probeOutput(out, err)
	r := SizeResult{Size: size}
	switch m := mtuReported.FindStringSubmatch(o); {
	case strings.Contains(o, " 1 received") || (err == nil && strings.Contains(o, "bytes from")):
		r.State = SizePassed
	case m != nil:
		r.State, r.Detail = SizeTooBig, firstLine(o)
		r.MTU, _ = strconv.Atoi(m[1])
	default:
		r.State, r.Detail = SizeSilent, "no echo reply within "+secs(mtuProbeLimit)+" s"
	}
	return r
}

// podMTU sweeps a hop from inside the pod with iputils ping (-M do sets Don't Fragment; busybox's
// ping cannot). The largest size is the MTU of the interface the route to the hop leaves by.
// The whole fixed sweep is one exec (pingSweepScript: the interface MTU, then every size at
// once), and a black hole's refinement one more: an exec costs the API server, the kubelet's
// stream and a process in the pod, hundreds of milliseconds on a loaded cluster, where the
// pings themselves cost a round trip or one probe limit.
func (g *Gatherer) podMTU(ctx context.Context, m *podMemos, tb toolbox, routes []linuxnet.Route, addr netip.Addr) MTUProbe {
	if !tb["ping"] || !tb["cat"] {
		return MTUProbe{Unmeasured: "the image has no ping (or no cat to read the interface MTU)"}
	}
	route := longestMatch(routes, addr)
	if route == nil || !linuxnet.ValidInterfaceName(route.Iface) { // it goes into a path
		return MTUProbe{Unmeasured: "no route to " + addr.String() + " in the pod's table"}
	}
	run := func(iface string, sizes []int) pingSweep {
		out, errOut, err := g.exec(ctx, m, []string{"sh", "-c", pingSweepScript(iface, addr, sizes)}, mtuProbeLimit+5*time.Second)
		sw := parsePingSweep(out, sizes)
		sw.err, sw.errOut = err, errOut
		return sw
	}
	first := run(route.Iface, nil)
	if first.mtu < 576 || first.mtu > 65535 {
		return MTUProbe{Unmeasured: fmt.Sprintf("the MTU of %s was not readable (%v)", route.Iface, sweepErr(first.errOut, first.err))}
	}
	if n := first.unmeasured(); n != "" {
		return MTUProbe{Unmeasured: n}
	}
	var unmeasured firstNote
	probe := finishSweep(first.mtu, first.results(sweepSizes(first.mtu)), func(sizes []int) []SizeResult {
		sw := run("", sizes) // a refinement that fails leaves its sizes out
		unmeasured.set(sw.noDF())
		return sw.results(sizes)
	})
	if n := unmeasured.get(); n != "" {
		return MTUProbe{Unmeasured: n}
	}
	return probe
}

// clientMTU sweeps a DNS hop from this machine with Don't-Fragment DNS questions padded to
// each size (EDNS0 padding). Any answer proves the datagram arrived: CoreDNS answers a question
// over 512 bytes with FORMERR, which is an answer.
func (g *Gatherer) clientMTU(ctx context.Context, to netip.AddrPort, local netip.Addr) MTUProbe {
	full, err := g.seams.Prober.InterfaceMTU(local)
	if err != nil {
		return MTUProbe{Unmeasured: "the MTU of the interface holding " + local.String() + " was not readable: " + err.Error()}
	}
	var unmeasured firstNote
	probe := sweepMTU(full, oneAtATime(func(size int) SizeResult {
		pctx, cancel := context.WithTimeout(ctx, mtuProbeLimit)
		defer cancel()
		r, err := g.seams.Prober.SendDF(pctx, to, size)
		if err != nil {
			unmeasured.set(err.Error())
		}
		return r
	}))
	if n := unmeasured.get(); n != "" {
		return MTUProbe{Unmeasured: n}
	}
	return probe
}

// firstNote keeps the first note set by a sweep's concurrent probes.
type firstNote struct {
	mu   sync.Mutex
	note string
}

func (n *firstNote) set(s string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.note == "" && s != "" {
		n.note = s
	}
}

func (n *firstNote) get() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.note
}
