package monitor

import (
	"context"
	"log/slog"
	"net/netip"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/checks/netpath"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// runData is one completed run: the path it walked, the checks' verdicts and what the probes
// gave, with the addresses that carry labels (the first MaxAddresses of all).
type runData struct {
	path     netpath.Path
	results  []engine.Result
	obs      observations
	all      []netip.Addr
	labelled []netip.Addr
}

// Address states, from the probes of one run.
const (
	addrUp       = "up"       // every probe answered
	addrDown     = "down"     // no probe answered
	addrDegraded = "degraded" // some kinds answered, others did not
	unknown      = "unknown"  // before the first run that probed it
)

// tracker remembers the last state of every check and address and logs one line each time
// one changes, naming what changed and the finding that says why. A state that holds is not
// logged again.
type tracker struct {
	log    *slog.Logger
	checks map[string]engine.Status
	addrs  map[netip.Addr]string
	known  map[netip.Addr]bool
	runs   int
}

func newTracker(log *slog.Logger) *tracker {
	return &tracker{log: log, checks: map[string]engine.Status{}, addrs: map[netip.Addr]string{}}
}

func (t *tracker) update(ctx context.Context, rd *runData) {
	t.runs++
	t.addressSet(ctx, rd)
	for _, r := range rd.results {
		prev, seen := t.checks[r.ID]
		t.checks[r.ID] = r.Status
		if prev == r.Status || (!seen && r.Status == engine.StatusPass) {
			continue
		}
		from := string(prev)
		if !seen {
			from = unknown
		}
		attrs := []slog.Attr{slog.String("check", r.ID), slog.String("title", r.Title), slog.String("from", from), slog.String("to", string(r.Status))}
		if f, ok := worstFinding(r.Findings, ""); ok {
			attrs = append(attrs, findingAttr(f))
		} else if r.Reason != "" {
			attrs = append(attrs, slog.String("reason", clip(r.Reason, 400)))
		}
		level := slog.LevelInfo
		if r.Status == engine.StatusFail || r.Status == engine.StatusError {
			level = slog.LevelWarn
		}
		t.log.LogAttrs(ctx, level, "check state changed", attrs...)
	}
	for _, a := range rd.labelled {
		state, probes := addressState(a, rd.obs)
		if state == unknown {
			continue
		}
		prev, seen := t.addrs[a]
		t.addrs[a] = state
		if prev == state || (!seen && state == addrUp) {
			continue
		}
		if !seen {
			prev = unknown
		}
		attrs := []slog.Attr{slog.String("address", a.String()), slog.String("from", prev), slog.String("to", state), slog.Group("probes", probes...)}
		if state != addrUp {
			if f, ok := worstFinding(allFindings(rd.results), a.String()); ok {
				attrs = append(attrs, findingAttr(f))
			}
		}
		level := slog.LevelInfo
		if state != addrUp {
			level = slog.LevelWarn
		}
		t.log.LogAttrs(ctx, level, "address state changed", attrs...)
	}
}

// addressSet logs the addresses of the first run, and any change after (a DHCP lease the team
// does not run, an edited Service), and says when some are left without labels.
func (t *tracker) addressSet(ctx context.Context, rd *runData) {
	now := map[netip.Addr]bool{}
	for _, a := range rd.all {
		now[a] = true
	}
	unlabelled := len(rd.all) - len(rd.labelled)
	if t.known == nil {
		t.log.LogAttrs(ctx, slog.LevelInfo, "addresses", slog.Any("addresses", addrStrings(rd.all)), slog.String("zone", rd.path.Zone.String()), slog.String("probeHost", rd.path.Host.Name))
	} else {
		var added, removed []netip.Addr
		for a := range now {
			if !t.known[a] {
				added = append(added, a)
			}
		}
		for a := range t.known {
			if !now[a] {
				removed = append(removed, a)
				delete(t.addrs, a)
			}
		}
		if len(added)+len(removed) > 0 {
			t.log.LogAttrs(ctx, slog.LevelWarn, "addresses changed", slog.Any("added", addrStrings(sortedSet(added))), slog.Any("removed", addrStrings(sortedSet(removed))),
				slog.Any("addresses", addrStrings(rd.all)))
		}
	}
	if unlabelled > 0 && (t.known == nil || len(now) != len(t.known)) {
		t.log.LogAttrs(ctx, slog.LevelWarn, "more addresses than --max-addresses: the checks judge them all, the per-address metrics carry the first ones only",
			slog.Int("addresses", len(rd.all)), slog.Int("labelled", len(rd.labelled)), slog.Int("unlabelled", unlabelled))
	}
	t.known = now
}

// addressState is up, down or degraded from the kinds probed at a (unknown when none was), with
// what each kind gave.
func addressState(a netip.Addr, obs observations) (string, []any) {
	okKinds, badKinds := 0, 0
	var probes []any
	for _, k := range Kinds {
		o := obs.probes[probeKey{a, k}]
		if o == nil {
			continue
		}
		if o.failed == 0 && o.ok > 0 {
			okKinds++
			probes = append(probes, slog.String(string(k), "ok"))
			continue
		}
		badKinds++
		why := "failed"
		if o.lastErr != nil {
			why = clip(o.lastErr.Error(), 300)
		}
		probes = append(probes, slog.String(string(k), why))
	}
	switch {
	case okKinds+badKinds == 0:
		return unknown, nil
	case badKinds == 0:
		return addrUp, probes
	case okKinds == 0:
		return addrDown, probes
	}
	return addrDegraded, probes
}

func allFindings(results []engine.Result) []engine.Finding {
	var out []engine.Finding
	for _, r := range results {
		out = append(out, r.Findings...)
	}
	return out
}

// worstFinding is the first failing finding, else the first warning, of fs; with addr set,
// only findings about that address (its evidence names it, or the object does).
func worstFinding(fs []engine.Finding, addr string) (engine.Finding, bool) {
	for _, sev := range []engine.Severity{engine.SeverityFail, engine.SeverityWarn} {
		for _, f := range fs {
			if f.Severity == sev && (addr == "" || aboutAddress(f, addr)) {
				return f, true
			}
		}
	}
	return engine.Finding{}, false
}

// aboutAddress: the path checks put the probed address:port in the evidence ("address"), and
// name the address in the object ("10.0.10.12", or "node-2 (10.0.10.12)").
func aboutAddress(f engine.Finding, addr string) bool {
	if ev, ok := f.Evidence["address"].(string); ok {
		if ap, err := netip.ParseAddrPort(ev); err == nil && ap.Addr().String() == addr {
			return true
		}
	}
	return f.Object == addr || strings.HasSuffix(f.Object, "("+addr+")")
}

func findingAttr(f engine.Finding) slog.Attr {
	return slog.Group("finding", slog.String("code", f.Code), slog.String("severity", string(f.Severity)),
		slog.String("object", clip(f.Object, 200)), slog.String("message", clip(f.Message, 600)))
}

func addrStrings(addrs []netip.Addr) []string {
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, a.String())
	}
	return out
}

func sortedSet(addrs []netip.Addr) []netip.Addr {
	m := map[netip.Addr]bool{}
	for _, a := range addrs {
		m[a] = true
	}
	return sortedAddrs(m)
}
