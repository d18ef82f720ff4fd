package netpath

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/internal/probetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

// dnsAnswersCase is one LA301 scenario: the zone each node serves, the dead nodes, and what
// the check must say.
type dnsAnswersCase struct {
	name string
	// corefile edits the ConfigMap's Corefile (what the pods should run); nil keeps it.
	corefile func(string) string
	// zones per node; nil = healthy; dead nodes listed apart.
	zone   func(i int, z *probetest.Zone)
	dead   []int
	want   engine.Status
	failOn []string // objects with a FAIL finding
	check  func(t *testing.T, o engine.Outcome)
}

func (tc dnsAnswersCase) run(t *testing.T) {
	f := newNetFixture(t)
	f.cfg.Timeout = time.Second // answers from loopback; room for a loaded CI machine
	if tc.corefile != nil {
		f.setup.ConfigMap.Data["Corefile"] = tc.corefile(f.setup.ConfigMap.Data["Corefile"])
	}
	for i := range lanNodeIPs {
		if containsIndex(tc.dead, i) {
			f.blackhole(i)
			continue
		}
		z := healthyLANZone()
		if tc.zone != nil {
			tc.zone(i, z)
		}
		f.serveDNS(i, z)
	}
	st, o := runNetCheck(t, DNSAnswers(f.env()))
	assert.Equal(t, tc.want, st, "findings: %+v", o.Findings)
	for _, obj := range tc.failOn {
		assert.NotEmpty(t, netFindings(o, engine.SeverityFail, obj), "a FAIL about %s", obj)
	}
	for _, fd := range o.Findings {
		assert.Equal(t, "grafana.apps.example.com", fd.Evidence["probeHost"], "every finding names the probe host")
	}
	if tc.check != nil {
		tc.check(t, o)
	}
}

func TestDNSAnswers(t *testing.T) {
	twoAddrs := lanNodeAddrs()[:2]
	tests := []dnsAnswersCase{
		{
			name: "every address answering the externalIPs over UDP and TCP passes",
			want: engine.StatusPass,
			check: func(t *testing.T, o engine.Outcome) {
				t.Helper()
				info := netFindings(o, engine.SeverityInfo, "Service lan-dns/lan-dns")
				require.Len(t, info, 1)
				ev := info[0].Evidence
				assert.Equal(t, "grafana.apps.example.com", ev["probeHost"])
				assert.Contains(t, ev["probeHostSource"], "IngressRoute monitoring/grafana")
				assert.Equal(t, []string{"127.0.0.11", "127.0.0.12", "127.0.0.13"}, ev["expected"])
				assert.Equal(t, []string{"127.0.0.11", "127.0.0.12", "127.0.0.13"}, ev["zoneTemplate"])
				names := ev["names"].([]string)
				require.Len(t, names, 3)
				assert.Equal(t, []string{"grafana.apps.example.com", "apps.example.com"}, names[:2])
				assert.Regexp(t, `^lanaccess-probe-[a-z2-7]{8}\.apps\.example\.com$`, names[2])
			},
		},
		{
			name:     "an address dropped from the zone fails on every address, naming the missing one",
			corefile: dropThirdAnswer,
			zone:     func(_ int, z *probetest.Zone) { z.Addrs = twoAddrs },
			want:     engine.StatusFail,
			failOn:   []string{lanNode(0), lanNode(1), lanNode(2)},
			check: func(t *testing.T, o engine.Outcome) {
				t.Helper()
				f := netFindings(o, engine.SeverityFail, lanNode(2))[0]
				assert.Equal(t, []string{"127.0.0.13"}, f.Evidence["missing"])
				assert.Contains(t, f.Remediation, `answer "{{ .Name }} 60 IN A 127.0.0.13"`)
				assert.Contains(t, f.Remediation, "kubectl -n lan-dns edit configmap lan-dns")
			},
		},
		{
			name: "answers the ConfigMap does not give come from a replica on an older Corefile: restart, not edit",
			zone: func(_ int, z *probetest.Zone) { z.Addrs = twoAddrs },
			want: engine.StatusFail,
			check: func(t *testing.T, o engine.Outcome) {
				t.Helper()
				f := netFindings(o, engine.SeverityFail, lanNode(0))[0]
				assert.Contains(t, f.Message, "a DNS replica runs an older one")
				assert.Contains(t, f.Remediation, "rollout restart deployment/lan-dns")
				assert.NotContains(t, f.Remediation, "edit configmap")
			},
		},
		{
			name: "one address answering another set fails that address and says the addresses disagree",
			zone: func(i int, z *probetest.Zone) {
				if i == 1 {
					z.Addrs = twoAddrs
				}
			},
			want:   engine.StatusFail,
			failOn: []string{lanNode(1), "Service lan-dns/lan-dns"},
			check: func(t *testing.T, o engine.Outcome) {
				t.Helper()
				f := netFindings(o, engine.SeverityFail, "Service lan-dns/lan-dns")[0]
				assert.Contains(t, f.Message, "disagree")
				assert.Contains(t, f.Remediation, "rollout restart deployment/lan-dns")
				assert.Empty(t, netFindings(o, engine.SeverityFail, lanNode(0)))
			},
		},
		{
			name: "a truncated UDP answer retried over TCP passes and says so",
			zone: func(_ int, z *probetest.Zone) { z.TruncateUDP = true },
			want: engine.StatusPass,
			check: func(t *testing.T, o engine.Outcome) {
				t.Helper()
				info := netFindings(o, engine.SeverityInfo, "")[0]
				answers := info.Evidence["answers"].(map[string]any)["127.0.0.11"].(map[string]any)["answers"].(map[string]any)
				assert.Contains(t, answers["A apps.example.com over udp"], "truncated over UDP, answered over TCP")
			},
		},
		{
			name: "SERVFAIL on one address fails that address only",
			zone: func(i int, z *probetest.Zone) {
				if i == 2 {
					z.Rcode = dns.RcodeServerFailure
				}
			},
			want:   engine.StatusFail,
			failOn: []string{lanNode(2)},
			check: func(t *testing.T, o engine.Outcome) {
				t.Helper()
				assert.Contains(t, netFindings(o, engine.SeverityFail, lanNode(2))[0].Message, "SERVFAIL")
			},
		},
		{
			name: "TCP answers that differ from UDP answers fail",
			zone: func(i int, z *probetest.Zone) {
				if i == 0 {
					z.TCPAddrs = twoAddrs
				}
			},
			want:   engine.StatusFail,
			failOn: []string{lanNode(0)},
			check: func(t *testing.T, o engine.Outcome) {
				t.Helper()
				msg := netFindings(o, engine.SeverityFail, lanNode(0))[0].Message
				assert.Contains(t, msg, "over tcp")
				assert.NotContains(t, msg, "over udp")
			},
		},
		{
			name: "answers without the AA flag warn",
			zone: func(_ int, z *probetest.Zone) { z.NotAuthoritative = true },
			want: engine.StatusWarn,
			check: func(t *testing.T, o engine.Outcome) {
				t.Helper()
				assert.Len(t, netFindings(o, engine.SeverityWarn, ""), 3)
			},
		},
		{
			name: "a TTL over an hour warns",
			zone: func(_ int, z *probetest.Zone) { z.TTL = 86400 },
			want: engine.StatusWarn,
			check: func(t *testing.T, o engine.Outcome) {
				t.Helper()
				assert.Contains(t, netFindings(o, engine.SeverityWarn, lanNode(0))[0].Message, "24h0m0s")
			},
		},
		{
			name: "a reply with a wrong message ID fails that address without calling it dead",
			zone: func(i int, z *probetest.Zone) {
				if i == 0 {
					z.WrongID = true
				}
			},
			want:   engine.StatusFail,
			failOn: []string{lanNode(0)},
			check: func(t *testing.T, o engine.Outcome) {
				t.Helper()
				for _, f := range netFindings(o, engine.SeverityFail, lanNode(0)) {
					assert.Contains(t, f.Message, "message ID")
					assert.NotContains(t, f.Message, "gave no answer")
				}
			},
		},
		{
			name: "a live address that does not answer over TCP fails per question, not as a dead node",
			zone: func(i int, z *probetest.Zone) {
				if i == 1 {
					z.SilentTCP = true
				}
			},
			want:   engine.StatusFail,
			failOn: []string{lanNode(1)},
			check: func(t *testing.T, o engine.Outcome) {
				t.Helper()
				fs := netFindings(o, engine.SeverityFail, lanNode(1))
				require.Len(t, fs, 1, "the one name asked over TCP (the probe host)")
				assert.Contains(t, fs[0].Message, "A grafana.apps.example.com over tcp")
				assert.Contains(t, netFindings(o, engine.SeverityInfo, "")[0].Message, "3 of 3 addresses answered")
			},
		},
		{
			name:   "a dead node fails once, with its address, and the others are judged",
			dead:   []int{2},
			want:   engine.StatusFail,
			failOn: []string{lanNode(2)},
			check: func(t *testing.T, o engine.Outcome) {
				t.Helper()
				fs := netFindings(o, engine.SeverityFail, lanNode(2))
				require.Len(t, fs, 1)
				assert.Contains(t, fs[0].Message, "127.0.0.13 gave no answer")
				assert.Equal(t, "127.0.0.13:53", fs[0].Evidence["address"])
				assert.Contains(t, netFindings(o, engine.SeverityInfo, "")[0].Message, "2 of 3 addresses answered")
			},
		},
		{
			name: "no address answering at all is an error, not a verdict",
			dead: []int{0, 1, 2},
			want: engine.StatusError,
			check: func(t *testing.T, o engine.Outcome) {
				t.Helper()
				assert.ErrorContains(t, o.Err, "is this machine on the LAN?")
				assert.Len(t, netFindings(o, engine.SeverityFail, ""), 3)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

// dropThirdAnswer removes the zone template's answer for 127.0.0.13.
func dropThirdAnswer(c string) string {
	return strings.Replace(c, "        answer \"{{ .Name }} 60 IN A 127.0.0.13\"\n", "", 1)
}

func TestDNSAnswersPreconditions(t *testing.T) {
	t.Run("without probers the check is an error", func(t *testing.T) {
		f := newNetFixture(t)
		env := f.env()
		env.Probes = nil
		st, _ := runNetCheck(t, DNSAnswers(env))
		assert.Equal(t, engine.StatusError, st)
	})
	t.Run("without a DNS Service the check is skipped with the flag to use", func(t *testing.T) {
		f := newNetFixture(t)
		f.setup.DNSService = nil
		st, o := runNetCheck(t, DNSAnswers(f.env()))
		assert.Equal(t, engine.StatusSkip, st)
		assert.Contains(t, o.Skip, "--dns-service")
	})
	t.Run("without a zone the check is skipped with the flag to use", func(t *testing.T) {
		f := newNetFixture(t)
		f.setup.Zone = zone.Zone{}
		st, o := runNetCheck(t, DNSAnswers(f.env()))
		assert.Equal(t, engine.StatusSkip, st)
		assert.Contains(t, o.Skip, "--zone")
	})
	t.Run("the port comes from the Service when it is not 53", func(t *testing.T) {
		f := newNetFixture(t)
		f.setup.DNSService.Spec.Ports = []corev1.ServicePort{
			{Name: "dns", Port: 5353, Protocol: corev1.ProtocolUDP},
			{Name: "dns-tcp", Port: 5353, Protocol: corev1.ProtocolTCP},
		}
		for _, ip := range lanNodeIPs {
			f.redirect[netip.AddrPortFrom(netip.MustParseAddr(ip), 5353)] = probetest.StartDNS(t, ip, healthyLANZone())
		}
		st, o := runNetCheck(t, DNSAnswers(f.env()))
		assert.Equal(t, engine.StatusPass, st, "findings: %+v", o.Findings)
	})
}
