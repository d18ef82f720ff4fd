package facts

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/linuxnet"
	"github.com/lanaccess/kubectl-lanaccess/pkg/nft"
)

// natScript prints the nat table as each iptables-save variant sees it (legacy and nft keep
// separate tables), then the nftables ruleset, where masquerade written with nft directly
// lives: as JSON, or as text when this nft has no JSON support.
const natScript = `for t in iptables-save iptables-legacy-save iptables-nft-save; do command -v "$t" >/dev/null 2>&1 || continue; echo "@@tool $t"; "$t" -t nat 2>&1; echo "@@rc $?"; done
if command -v nft >/dev/null 2>&1; then echo "@@tool nft -j"; nft -j list ruleset 2>&1; rc=$?; echo "@@rc $rc"; if [ "$rc" != 0 ]; then echo "@@tool nft"; nft list ruleset 2>&1; echo "@@rc $?"; fi; fi
echo "@@end"`

func (g *Gatherer) readNAT(ctx context.Context, m *podMemos) (NAT, error) {
	tun, err := g.podTunnel(ctx, m)
	if err != nil {
		return NAT{}, err
	}
	if !tun.Pool.IsValid() {
		return NAT{}, fmt.Errorf("%s: the client pool is unknown (see VPN004), so its masquerade cannot be looked for", m.object())
	}
	out, _, err := g.exec(ctx, m, []string{"sh", "-c", natScript}, g.execTimeout())
	if err != nil {
		return NAT{}, fmt.Errorf("reading the nat table of %s: %w", m.object(), err)
	}
	n := NAT{Pool: tun.Pool}
	n.Read, n.Rules, n.Unknown = readNATOutputs(out, tun.Pool)
	return n, nil
}

// readNATOutputs reads each tool's output (iptables-save variants, nft) and returns the rules
// rewriting pool, deduplicated.
func readNATOutputs(out string, pool netip.Prefix) (read []string, rules []linuxnet.NATRule, unknown string) {
	if !strings.Contains(out, "@@end") {
		return nil, nil, "the nat table read was cut short"
	}
	var failures []string
	tool, body := "", strings.Builder{}
	seen := map[string]bool{}
	for line := range strings.SplitSeq(out, "\n") {
		switch {
		case strings.HasPrefix(line, "@@tool "):
			tool = strings.TrimPrefix(line, "@@tool ")
			body.Reset()
		case strings.HasPrefix(line, "@@rc "):
			text := body.String()
			found, err := toolNAT(tool, text, pool)
			if strings.TrimPrefix(line, "@@rc ") != "0" || err != nil {
				failures = append(failures, tool+": "+firstLine(text))
				continue
			}
			read = append(read, tool)
			for _, r := range found {
				if !seen[r.Raw] {
					seen[r.Raw] = true
					rules = append(rules, r)
				}
			}
		default:
			body.WriteString(line + "\n")
		}
	}
	switch {
	case len(read) > 0:
		return read, rules, ""
	case len(failures) > 0:
		return nil, nil, "neither iptables-save nor nft could read the NAT rules (" + strings.Join(failures, "; ") + ")"
	}
	return nil, nil, "the image has neither iptables-save nor nft, so the masquerade cannot be seen"
}

// toolNAT reads one tool's output: an iptables-save nat table, nft's JSON or text.
func toolNAT(tool, text string, pool netip.Prefix) ([]linuxnet.NATRule, error) {
	switch tool {
	case "nft -j":
		rs, err := nft.ParseJSON([]byte(text))
		return rs.SourceNATFor(pool), err
	case "nft":
		rs, err := nft.ParseText(text)
		return rs.SourceNATFor(pool), err
	}
	if !strings.Contains(text, "*nat") {
		return nil, errors.New("no nat table in the output")
	}
	return linuxnet.ParseIPTablesSave(text).SourceNATFor(pool), nil
}

// firstLine is the first line of s, trimmed ("no output" when empty).
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return "no output"
	}
	return s
}

func (g *Gatherer) listPolicies(ctx context.Context) ([]networkingv1.NetworkPolicy, error) {
	nps, err := g.seams.Client.NetworkingV1().NetworkPolicies("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing NetworkPolicies: %w", err)
	}
	return nps.Items, nil
}
