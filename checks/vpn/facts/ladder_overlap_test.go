package facts

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
	"github.com/lanaccess/kubectl-lanaccess/pkg/linuxnet"
)

// guard bounds a wait that only a regression would make endless: it is never a measure.
const guard = 30 * time.Second

// gatedSweepExec holds every Don't-Fragment sweep until release is closed, telling sweepAsked
// that one is waiting, then answers that every size up to an MTU of 1500 passed.
type gatedSweepExec struct {
	sweepAsked chan struct{}
	once       sync.Once
	release    chan struct{}
}

func (e *gatedSweepExec) Exec(ctx context.Context, _ podexec.PodRef, _ string, _ []string, _ io.Reader) ([]byte, []byte, error) {
	e.once.Do(func() { close(e.sweepAsked) })
	select {
	case <-e.release:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	var out strings.Builder
	out.WriteString("@@mtu 1500\n")
	for _, size := range sweepSizes(1500) {
		fmt.Fprintf(&out, "@@%d 1 packets transmitted, 1 received\n@@%d exit 0\n", size, size)
	}
	out.WriteString("@@end\n")
	return []byte(out.String()), nil, nil
}

// A hop's MTU sweep runs beside the next hops: the next hop is probed while the sweep's pings
// are still out (here it waits for one of them to be in flight, and only then lets them go),
// and the ladder comes back with the sweep filled in.
func TestAHopsMTUSweepRunsBesideTheNextHops(t *testing.T) {
	ex := &gatedSweepExec{sweepAsked: make(chan struct{}), release: make(chan struct{})}
	g := New(Seams{Exec: ex}, Options{})
	peer, pod := netip.MustParseAddr("10.8.0.2"), netip.MustParseAddr("10.244.1.7")
	p := &podWalk{g: g, ctx: t.Context(), m: &podMemos{ref: podexec.PodRef{Namespace: "vpn", Name: "openvpn-0"}, container: "openvpn"},
		tb: toolbox{"ping": true, "cat": true}, limit: time.Second,
		routes: []linuxnet.Route{{Iface: "tun0", Dest: netip.MustParsePrefix("10.8.0.0/24")}},
		w:      &walker{stops: func(HopResult) bool { return true }}}
	p.w.step(HopPeer, peer, peer.String(), p.withMTU(peer, func() HopResult { return HopResult{Hop: HopPeer, State: HopAnswered} }))
	p.w.step(HopPodIP, pod, pod.String(), func() HopResult {
		select {
		case <-ex.sweepAsked:
			close(ex.release)
			return HopResult{Hop: HopPodIP, State: HopAnswered}
		case <-time.After(guard):
			return HopResult{Hop: HopPodIP, State: HopSilent, Detail: "the peer's sweep was not in flight while the next hop was probed"}
		}
	})
	p.sweeps.Wait()
	require.Len(t, p.w.ladder, 2)
	assert.Equal(t, HopAnswered, p.w.ladder[1].State, p.w.ladder[1].Detail)
	require.NotNil(t, p.w.ladder[0].MTU)
	assert.Equal(t, 1500, p.w.ladder[0].MTU.Largest(), "the sweep's answers are in the ladder")
}

// Every size of the fixed sweep goes out at once: each is asked before any of them answers.
func TestTheMTUSweepSendsItsSizesTogether(t *testing.T) {
	var inFlight atomic.Int32
	all := make(chan struct{})
	var once sync.Once
	m := sweepMTU(1500, eachSize(func(size int) SizeResult {
		if inFlight.Add(1) == int32(len(sweepSizes(1500))) {
			once.Do(func() { close(all) })
		}
		select {
		case <-all:
			return SizeResult{Size: size, State: SizePassed}
		case <-time.After(guard):
			return SizeResult{Size: size, State: SizeSilent, Detail: "sent alone"}
		}
	}))
	assert.False(t, m.BlackHole(), "%+v", m.Sizes)
	assert.Equal(t, 1500, m.Largest())
	sizes := make([]int, 0, len(m.Sizes))
	for _, s := range m.Sizes {
		sizes = append(sizes, s.Size)
	}
	assert.Equal(t, []int{84, 576, 1200, 1280, 1360, 1400, 1440, 1500}, sizes, "the results keep the sweep's order")
}
