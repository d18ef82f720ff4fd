package corefiletest

import (
	"fmt"
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
		msg := ""
		if loadErr != nil {
			var pe *corefile.ParseError
			if e, ok := loadErr.(*corefile.ParseError); ok {
				pe = e
				msg = pe.Msg
			}
		} else {
			msg = cf.Problems[0].Message
		}
		v.Checked++
		if msg == "" || !strings.Contains(run.Error, firstClause(msg)) {
			v.Wrong = append(v.Wrong, fmt.Sprintf("the model says CoreDNS stops with %q; CoreDNS said %q", msg, run.Error))
		}
		return v
	}
	for _, pa := range run.Ports {
		for _, a := range pa.Answers {
			name, qtype := a.NameType()
			o := cf.Query(corefile.Question{Name: name, Type: qtype, Port: pa.Port})
			q := fmt.Sprintf("port %s %s over %s", pa.Port, a.Question, a.Transport)
			v.Checked++
			if o.Forwarded != a.Forwarded && (o.Known() || o.Forwarded) {
				v.Wrong = append(v.Wrong, fmt.Sprintf("%s: the model says forwarded=%t (%s); CoreDNS: forwarded=%t", q, o.Forwarded, o.Describe(), a.Forwarded))
				continue
			}
			if !o.Known() {
				if a.Forwarded && !o.Forwarded {
					v.Wrong = append(v.Wrong, fmt.Sprintf("%s: forwarded by CoreDNS; the model: %s", q, o.Describe()))
					continue
				}
				v.Unknown = append(v.Unknown, q+": "+o.Unknown)
				continue
			}
			if o.Forwarded {
				continue // the answer is the upstream's
			}
			if got := dns.RcodeToString[o.Rcode]; got != a.Rcode {
				v.Wrong = append(v.Wrong, fmt.Sprintf("%s: the model says %s (%s); CoreDNS: %s %v", q, got, o.Describe(), a.Rcode, a.Answer))
				continue
			}
			withTTL := a.Transport == "udp"
			if got := corednsrun.Records(o.Records, withTTL); !slices.Equal(got, a.Answer) {
				v.Wrong = append(v.Wrong, fmt.Sprintf("%s: the model answers %q; CoreDNS: %q", q, got, a.Answer))
			}
			if got := corednsrun.Records(o.Authority, withTTL); !slices.Equal(got, a.Authority) {
				v.Wrong = append(v.Wrong, fmt.Sprintf("%s: the model's authority is %q; CoreDNS: %q", q, got, a.Authority))
			}
			if o.Authoritative != slices.Contains(a.Flags, "aa") {
				v.Wrong = append(v.Wrong, fmt.Sprintf("%s: the model says aa=%t; CoreDNS flags %v", q, o.Authoritative, a.Flags))
			}
		}
	}
	return v
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
