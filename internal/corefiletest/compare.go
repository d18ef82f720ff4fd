package corefiletest

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/lanaccess/kubectl-lanaccess/internal/corednsrun"
	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
)

// Verdict is how the model's predictions for one run compare with what CoreDNS did.
type Verdict struct {
	// Wrong lists the predictions that differ from CoreDNS: the model is wrong there.
	Wrong []string
	// Unknown lists the questions the model does not fully predict, with why.
	Unknown []string
	// Checked counts the predictions compared.
	Checked int
}

// Compare holds the model (cf, or the error Load returned) to one run of the real CoreDNS.
func Compare(cf *corefile.Corefile, loadErr error, run Run) Verdict {
	var v Verdict
	starts := loadErr == nil && cf.Starts()
	v.Checked++
	if starts != run.Starts {
		why := "starts"
		if loadErr != nil {
			why = loadErr.Error()
		} else if !cf.Starts() {
			why = cf.Problems[0].String()
		}
		v.Wrong = append(v.Wrong, fmt.Sprintf("the model says starts=%t (%s); CoreDNS: starts=%t %s", starts, why, run.Starts, run.Error))
		return v
	}
	if !starts {
		v.compareStop(cf, loadErr, run)
		return v
	}
	for _, pa := range run.Ports {
		for _, a := range pa.Answers {
			v.compareAnswer(cf, pa.Port, loopback, a, true)
		}
	}
	for _, sa := range run.Sources {
		if len(run.Ports) == 0 {
			break
		}
		ip, _, _ := strings.Cut(sa.Source, " ")
		src, err := netip.ParseAddr(ip)
		if err != nil {
			v.Wrong = append(v.Wrong, fmt.Sprintf("source %q is not an address", sa.Source))
			continue
		}
		// the harness records the rcode and the records (without TTL) of each source's answer,
		// not its flags or authority section
		v.compareAnswer(cf, run.Ports[0].Port, src, Answer{Question: sa.Question, Transport: "tcp", Rcode: sa.Rcode,
			Answer: sa.Answer, Forwarded: sa.Forwarded, Flags: nil, Authority: nil}, false)
	}
	return v
}

// loopback is the source of the harness's questions on the machine's loopback.
var loopback = netip.MustParseAddr("127.0.0.1")

// compareStop: the error the model says CoreDNS stops with is the one it printed.
func (v *Verdict) compareStop(cf *corefile.Corefile, loadErr error, run Run) {
	msg := ""
	if loadErr != nil {
		if pe, ok := errors.AsType[*corefile.ParseError](loadErr); ok {
			msg = pe.Msg
		}
	} else {
		msg = cf.Problems[0].Message
	}
	v.Checked++
	if msg == "" || !strings.Contains(run.Error, firstClause(msg)) {
		v.Wrong = append(v.Wrong, fmt.Sprintf("the model says CoreDNS stops with %q; CoreDNS said %q", msg, run.Error))
	}
}

// compareAnswer holds the model's outcome for one question to CoreDNS's answer.
// whole: the answer's flags and authority section were recorded too.
func (v *Verdict) compareAnswer(cf *corefile.Corefile, port string, src netip.Addr, a Answer, whole bool) {
	name, qtype := a.NameType()
	o := cf.Query(corefile.Question{Name: name, Type: qtype, Port: port, Source: src})
	q := fmt.Sprintf("port %s %s over %s from %s", port, a.Question, a.Transport, src)
	v.Checked++
	switch {
	case o.Forwarded != a.Forwarded && (o.Known() || o.Forwarded):
		v.Wrong = append(v.Wrong, fmt.Sprintf("%s: the model says forwarded=%t (%s); CoreDNS: forwarded=%t", q, o.Forwarded, o.Describe(), a.Forwarded))
	case !o.Known() && a.Forwarded && !o.Forwarded:
		v.Wrong = append(v.Wrong, fmt.Sprintf("%s: forwarded by CoreDNS; the model: %s", q, o.Describe()))
	case !o.Known():
		v.Unknown = append(v.Unknown, q+": "+o.Unknown)
	case o.Forwarded:
		// the answer is the upstream's
	case dns.RcodeToString[o.Rcode] != a.Rcode:
		v.Wrong = append(v.Wrong, fmt.Sprintf("%s: the model says %s (%s); CoreDNS: %s %v", q, dns.RcodeToString[o.Rcode], o.Describe(), a.Rcode, a.Answer))
	default:
		withTTL := a.Transport == "udp"
		if got := corednsrun.Records(o.Records, withTTL); !slices.Equal(got, a.Answer) {
			v.Wrong = append(v.Wrong, fmt.Sprintf("%s: the model answers %q; CoreDNS: %q", q, got, a.Answer))
		}
		if !whole {
			return
		}
		if got := corednsrun.Records(o.Authority, withTTL); !slices.Equal(got, a.Authority) {
			v.Wrong = append(v.Wrong, fmt.Sprintf("%s: the model's authority is %q; CoreDNS: %q", q, got, a.Authority))
		}
		if o.Authoritative != slices.Contains(a.Flags, "aa") {
			v.Wrong = append(v.Wrong, fmt.Sprintf("%s: the model says aa=%t; CoreDNS flags %v", q, o.Authoritative, a.Flags))
		}
	}
}

// firstClause is the part of CoreDNS's message to compare: its first line, and, for a syntax
// error, up to the token it names (the harness rewrites upstreams and ports, which can be that
// token).
func firstClause(msg string) string {
	if i := strings.Index(msg, "\n"); i >= 0 {
		msg = msg[:i]
	}
	const token = "Unexpected token '"
	if i := strings.Index(msg, token); i >= 0 {
		msg = msg[:i+len(token)]
	}
	return msg
}
