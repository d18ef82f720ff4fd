package netpath

import (
	"context"
	"fmt"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// The slow-node rule, stated in every finding: with linkSamples requests per address on one
// connection (one TCP connect and TLS handshake, linkSamples first-byte round trips), an
// address is slow when its median exceeds slowFactor times the median of the other addresses'
// medians and is also slowMargin above it (so that 2 ms against 0.8 ms on a quiet LAN is not
// "slow"). One connection per address, not one per sample, keeps the cost of many addresses
// low: a handshake is what costs (both ends' CPU), a round trip on an open connection is not.
// It is the connection LA401 judges: the probe set answers the same request once.
const (
	linkSamples = 3
	slowFactor  = 2
	slowMargin  = 50 * time.Millisecond
)

// LinkQuality is LA403: a node whose TLS handshake or first byte is far slower than the others'
// slows one connection in N (the seed's 100 Mb/s network card): a workstation picks one
// address at random.
func LinkQuality(env *Env) engine.Check {
	return catalogue.Check("LA403", func(ctx context.Context) engine.Outcome { return linkQuality(ctx, env) })
}

type linkSample struct {
	connect, handshake, firstByte []time.Duration
	err                           error
}

func (s linkSample) medians() (connect, handshake, firstByte time.Duration) {
	return probe.Median(s.connect), probe.Median(s.handshake), probe.Median(s.firstByte)
}

func linkQuality(ctx context.Context, env *Env) engine.Outcome {
	p, targets, out, ok := httpsPath(env)
	if !ok {
		return out
	}
	samples := netEachTarget(ctx, targets, func(ctx context.Context, t Target) linkSample { return sampleLink(ctx, env, p, t) })
	if err := netInterrupted(ctx); err != nil {
		return engine.Outcome{Err: err}
	}
	rule := fmt.Sprintf("%d requests per address on one connection (median first byte; connect and handshake of that connection); slow = more than %dx the median of the other addresses and more than %s above it",
		linkSamples, slowFactor, slowMargin)
	var findings []engine.Finding
	perAddr := map[string]any{}
	var measured []int
	for i, t := range targets {
		s := samples[i]
		if s.err != nil {
			perAddr[t.Addr.Addr().String()] = map[string]any{"notSampled": s.err.Error()}
			continue
		}
		c, h, fb := s.medians()
		perAddr[t.Addr.Addr().String()] = map[string]any{"connectMs": netMillis(c), "handshakeMs": netMillis(h), "firstByteMs": netMillis(fb)}
		measured = append(measured, i)
	}
	base := func() map[string]any {
		return p.hostEvidence(map[string]any{"rule": rule, "medians": perAddr})
	}
	if len(measured) < 2 {
		return engine.Outcome{Findings: []engine.Finding{{
			Code: "LA403-NOT-COMPARED", Severity: engine.SeverityInfo, Object: p.ProxyObject, Evidence: base(),
			Message: fmt.Sprintf("%d of %d addresses could be sampled: nothing to compare", len(measured), len(targets)),
		}}}
	}
	for _, i := range measured {
		for _, m := range againstTheOthers(samples, measured, i) {
			if m.slow() {
				ev := base()
				ev["address"] = targets[i].Addr.String()
				findings = append(findings, slowFinding(targets[i], m, rule, ev))
			}
		}
	}
	findings = append(findings, engine.Finding{
		Code: "LA403-SUMMARY", Severity: engine.SeverityInfo, Object: p.ProxyObject, Evidence: base(),
		Message: fmt.Sprintf("%d addresses sampled %d times each (%s)", len(measured), linkSamples, rule),
	})
	return engine.Outcome{Findings: findings}
}

// sampleLink times one connection to t (connect, handshake, and each first byte).
func sampleLink(ctx context.Context, env *Env, p *Path, t Target) linkSample {
	var s linkSample
	r, err := env.Probes.Get(ctx, p.request(t))
	if err != nil {
		s.err = err
		return s // a sample that fails is LA401's business; timings are then meaningless
	}
	s.connect = []time.Duration{r.Timings.Connect}
	s.handshake = []time.Duration{r.Timings.Handshake}
	s.firstByte = r.FirstBytes
	if len(s.firstByte) == 0 {
		s.firstByte = []time.Duration{r.Timings.FirstByte}
	}
	return s
}

// linkMedian is one timing of an address against the median of the other addresses'.
type linkMedian struct {
	what        string
	mine, other time.Duration
}

// slow is the slow-node rule (slowFactor and slowMargin).
func (m linkMedian) slow() bool { return m.mine > slowFactor*m.other && m.mine-m.other > slowMargin }

// againstTheOthers sets the handshake and first-byte medians of sample i against the median of
// the other measured samples' medians.
func againstTheOthers(samples []linkSample, measured []int, i int) []linkMedian {
	_, h, fb := samples[i].medians()
	var otherH, otherFB []time.Duration
	for _, j := range measured {
		if j != i {
			_, oh, ofb := samples[j].medians()
			otherH, otherFB = append(otherH, oh), append(otherFB, ofb)
		}
	}
	return []linkMedian{{"TLS handshake", h, probe.Median(otherH)}, {"first byte", fb, probe.Median(otherFB)}}
}

// slowFinding says that t is slow on m, with where to look.
func slowFinding(t Target, m linkMedian, rule string, ev map[string]any) engine.Finding {
	return engine.Finding{
		Code:     "LA403-SLOW",
		Severity: engine.SeverityWarn,
		Object:   t.Object,
		Message: fmt.Sprintf("%s is slow: median %s %s against %s on the other addresses (%s); a workstation that picks it waits longer",
			t.Addr.Addr(), m.what, m.mine.Round(time.Millisecond), m.other.Round(time.Millisecond), rule),
		Evidence: ev,
		Remediation: remedy.Commentf("# check the node's link (speed, duplex, errors) on the interface that carries %s:\nip -s link; ethtool <interface>\n", t.Addr.Addr()) +
			"# or take the address out of the proxy and DNS Services' externalIPs (the zone's template follows when it is rendered from the same list)",
	}
}
