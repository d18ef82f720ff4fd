package config

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// kube-proxy programs a Service's externalIPs only in the families of its ClusterIPs: each
// proxier (one per family) skips a Service without a ClusterIP of its family (kubernetes v1.37
// pkg/proxy/servicechangetracker.go serviceToServiceMap, GetClusterIPByFamily) and keeps only
// the externalIPs of its family (pkg/proxy/serviceport.go newBaseServiceInfo, "Filter
// ExternalIPs to correct IP family"). The API server accepts IPv6 externalIPs on a single-stack
// IPv4 Service (verified on the lab's kube-apiserver v1.37.2): no node captures them. A dual-stack
// Service (spec.ipFamilyPolicy PreferDualStack or RequireDualStack) gets a ClusterIP of each
// family only in a cluster whose service CIDRs have both families.

// uncapturedFindings: per Service, the externalIPs of a family it has no ClusterIP of. FAIL when
// the zone answers with one of them (clients of that family connect where nothing is
// captured), WARN otherwise (claimed for nothing). The fix keeps the captured family in the
// Service; when the zone answers them, the zone's answers of that family go too.
func uncapturedFindings(s *kube.Setup, zoneA, zoneAAAA addrSource) ([]engine.Finding, []netip.Addr) {
	var out []engine.Finding
	var all []netip.Addr
	for _, svc := range []*corev1.Service{s.ProxyService, s.DNSService} {
		if svc == nil {
			continue
		}
		families := serviceFamilies(svc)
		if len(families) == 0 {
			continue // headless or not allocated: kube-proxy skips it altogether, LA102/LA103 say so
		}
		var lost, kept []netip.Addr
		for _, raw := range svc.Spec.ExternalIPs {
			a, err := netip.ParseAddr(raw)
			if err != nil {
				continue // LA101-ADDRESS-INVALID
			}
			a = a.Unmap()
			if slices.Contains(families, familyOf(a)) {
				kept = append(kept, a)
			} else if !slices.Contains(lost, a) {
				lost = append(lost, a)
			}
		}
		if len(lost) == 0 {
			continue
		}
		all = append(all, lost...)
		out = append(out, uncapturedFinding(svc, families, lost, kept, zoneA, zoneAAAA))
	}
	return out, all
}

func uncapturedFinding(svc *corev1.Service, families []corev1.IPFamily, lost, kept []netip.Addr, zoneA, zoneAAAA addrSource) engine.Finding {
	zone := zoneAAAA
	if lost[0].Is4() {
		zone = zoneA
	}
	answered := slices.ContainsFunc(lost, func(a netip.Addr) bool { return slices.Contains(zone.set(), a) })
	fams := make([]string, 0, len(families))
	for _, f := range families {
		fams = append(fams, string(f))
	}
	msg := fmt.Sprintf("Service %s/%s has ClusterIPs of %s only (spec.ipFamilies): kube-proxy captures none of its externalIPs %s, it programs externalIPs only in the families of a Service's ClusterIPs",
		svc.Namespace, svc.Name, strings.Join(fams, ", "), addrList(lost))
	f := engine.Finding{Code: "LA101-FAMILY-NOT-CAPTURED", Severity: engine.SeverityWarn, Object: kubeobj.ServiceRef(svc),
		Evidence: map[string]any{"ipFamilies": fams, "uncaptured": addrStrings(lost), "zoneAnswers": answered}}
	if answered {
		f.Severity = engine.SeverityFail
		f.Message = msg + fmt.Sprintf("; the zone answers %s with them, so clients of that family connect where no node captures anything", zone.RType)
	} else {
		f.Message = msg + ": they are claimed for nothing"
	}
	f.Remediation = "# keep the addresses kube-proxy captures (or make the cluster dual-stack, then set spec.ipFamilyPolicy: PreferDualStack: that cannot be proven on this cluster)\n" +
		kube.ManagedNote(svc, "Service", "spec.externalIPs") +
		remedy.MergePatch(svc.Namespace, "service", svc.Name, map[string]any{"spec": map[string]any{"externalIPs": addrStrings(kept)}})
	if answered {
		f.Remediation += "\n" + remedy.Commentf("# and remove the zone's %s template, whose answers nothing captures (AAAA then answers NODATA from the catch-all template)", zone.RType)
	}
	return f
}

// serviceFamilies are the IP families of a Service's ClusterIPs (none for a headless Service or
// one without a ClusterIP yet).
func serviceFamilies(svc *corev1.Service) []corev1.IPFamily {
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	var out []corev1.IPFamily
	for _, raw := range ips {
		if a, err := netip.ParseAddr(raw); err == nil && !slices.Contains(out, familyOf(a)) {
			out = append(out, familyOf(a))
		}
	}
	return out
}

func familyOf(a netip.Addr) corev1.IPFamily {
	if a.Unmap().Is4() {
		return corev1.IPv4Protocol
	}
	return corev1.IPv6Protocol
}
