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
// 1280 IPv6's, encapsulation overheads below 1500), then the interface MTU; then at most
// mtuRefine bisections between the last size that passed and the first that vanished.
var mtuSweep = []int{84, 576, 1200, 1280, 1360, 1400, 1440}

const (
	mtuRefine     = 4
	mtuProbeLimit = time.Second
)

// mtuParallel bounds the sizes of one sweep in flight at once.
const mtuParallel = 4

// sweepMTU probes each size with send, bounded in count (at most len(mtuSweep)+1+mtuRefine).
// The small packet goes first (when it does not pass, this is not an MTU question); the other
// sizes of the fixed sweep are independent and go out together, a few at a time, so that a
// sweep costs a few round trips and a black hole one probe limit, not one per size. send must
// be safe for concurrent use. The bisections that follow depend on each other's answers.
func sweepMTU(full int, send func(size int) SizeResult) MTUProbe {
	m := MTUProbe{Full: full}
	var sizes []int
	for _, size := range append(slices.Clone(mtuSweep), full) {
		if size <= full && !slices.Contains(sizes, size) {
			sizes = append(sizes, size)
		}
	}
	if len(sizes) == 0 {
		return m
	}
	first := send(sizes[0])
	m.Sizes = append(m.Sizes, first)
	if sizes[0] == mtuSweep[0] && first.State != SizePassed {
		return m // the small packet did not pass: not an MTU question
	}
	rest := make([]SizeResult, len(sizes)-1)
	sem := make(chan struct{}, mtuParallel)
	var wg sync.WaitGroup
	for i, size := range sizes[1:] {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			rest[i] = send(size)
		})
	}
	wg.Wait()
	m.Sizes = append(m.Sizes, rest...)
	for i := 0; i < mtuRefine && m.BlackHole(); i++ {
		lo, hi := m.Largest(), m.FirstSilent()
		if hi-lo <= 8 {
			break
		}
		m.Sizes = append(m.Sizes, send((lo+hi)/2))
	}
	return m
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
func (g *Gatherer) podMTU(ctx context.Context, m *podMemos, tb toolbox, routes []linuxnet.Route, addr netip.Addr) MTUProbe {
	if !tb["ping"] || !tb["cat"] {
		return MTUProbe{Unmeasured: "the image has no ping (or no cat to read the interface MTU)"}
	}
	route := longestMatch(routes, addr)
	if route == nil || !linuxnet.ValidInterfaceName(route.Iface) { // it goes into a path
		return MTUProbe{Unmeasured: "no route to " + addr.String() + " in the pod's table"}
	}
	out, _, err := g.exec(ctx, m, []string{"cat", "/sys/class/net/" + route.Iface + "/mtu"}, g.execTimeout())
	full, perr := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || perr != nil || full < 576 || full > 65536 {
		return MTUProbe{Unmeasured: fmt.Sprintf("the MTU of %s was not readable (%v)", route.Iface, firstLine(out))}
	}
	var unmeasured firstNote
	probe := sweepMTU(full, func(size int) SizeResult {
		if unmeasured.get() != "" {
			return SizeResult{Size: size, State: SizeSilent}
		}
		cmd := []string{"ping", "-M", "do", "-s", strconv.Itoa(size - 28), "-c", "1", "-W", secs(mtuProbeLimit), addr.String()}
		out, errOut, err := g.exec(ctx, m, cmd, mtuProbeLimit+5*time.Second)
		if o := probeOutput(out+errOut, err); strings.Contains(o, "invalid option") || strings.Contains(o, "unrecognized option") {
			unmeasured.set("this ping cannot set Don't Fragment (-M do): " + firstLine(o))
		}
		return pingSizeResult(size, out+"\n"+errOut, err)
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
	probe := sweepMTU(full, func(size int) SizeResult {
		if unmeasured.get() != "" {
			return SizeResult{Size: size, State: SizeSilent}
		}
		pctx, cancel := context.WithTimeout(ctx, mtuProbeLimit)
		defer cancel()
		r, err := g.seams.Prober.SendDF(pctx, to, size)
		if err != nil {
			unmeasured.set(err.Error())
		}
		return r
	})
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
	if n.note == "" {
		n.note = s
	}
}

func (n *firstNote) get() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.note
}
