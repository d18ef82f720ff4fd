package config

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// dnsTargetPorts are the container ports the DNS Service's port 53 reaches.
func dnsTargetPorts(s *kube.Setup) []int32 {
	spec := dnsPodSpec(s)
	var out []int32
	for _, sp := range s.DNSService.Spec.Ports {
		if sp.Port != 53 {
			continue
		}
		if t := kubeobj.ResolveTargetPort(sp, spec); t.Port > 0 && !slices.Contains(out, t.Port) {
			out = append(out, t.Port)
		}
	}
	return out
}

// zoneBlocks are the blocks that serve the zone: by their keys, or by templates naming it.
func zoneBlocks(cf *corefile.Corefile, zone string) []*corefile.ServerBlock {
	out := cf.BlocksServing(zone, "")
	for _, b := range templateBlocks(cf, zone) {
		if !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}

// portFindings: CoreDNS listens on the port the Service sends queries to. When the container
// declares the Corefile's port, the Service is the one to fix (LA103 says so).
func portFindings(s *kube.Setup, cf *corefile.Corefile, obj, edit string) []engine.Finding {
	targets := dnsTargetPorts(s)
	if len(targets) == 0 || s.Zone.IsZero() {
		return nil // LA103 reports the Service ports
	}
	declared := dnsDeclaredPorts(s)
	var out []engine.Finding
	for _, zb := range zoneBlocks(cf, s.Zone.FQDN()) {
		for _, p := range zb.Ports() {
			n64, err := strconv.ParseUint(p, 10, 16)
			n := int32(n64) // #nosec G115 -- ParseUint bounded it to 16 bits
			if err != nil {
				out = append(out, engine.Finding{Code: "LA104-PORT-FROM-ENV", Severity: engine.SeverityInfo, Object: obj,
					Message: fmt.Sprintf("%s listens on %s, set in the pod's environment: not compared with the Service's target port", zb.Label(), p)})
				continue
			}
			if slices.Contains(targets, n) || slices.Contains(declared, n) {
				continue
			}
			out = append(out, engine.Finding{Code: "LA104-PORT-MISMATCH", Severity: engine.SeverityFail, Object: obj,
				Message:     fmt.Sprintf("%s listens on port %d, but %s sends queries to port %s: nothing answers them", zb.Label(), n, kubeobj.ServiceRef(s.DNSService), joinPorts(targets)),
				Evidence:    map[string]any{"corefilePort": n, "targetPorts": targets, "line": zb.Line},
				Remediation: edit + "   " + remedy.Comment(fmt.Sprintf("write the blocks as %s:%d and .:%d (or target port %d in the Service; the fix cannot be proven before it is written)", s.Zone, targets[0], targets[0], n))})
		}
	}
	return dedupe(out)
}

// dnsDeclaredPorts are the container ports the DNS pods declare.
func dnsDeclaredPorts(s *kube.Setup) []int32 {
	spec := dnsPodSpec(s)
	var out []int32
	if spec == nil {
		return nil
	}
	for _, c := range spec.Containers {
		for _, cp := range c.Ports {
			if !slices.Contains(out, cp.ContainerPort) {
				out = append(out, cp.ContainerPort)
			}
		}
	}
	return out
}

func joinPorts(ports []int32) string {
	out := make([]string, 0, len(ports))
	for _, p := range ports {
		out = append(out, strconv.Itoa(int(p)))
	}
	return strings.Join(out, ", ")
}

// mountFindings: the kubelet never refreshes a subPath mount, so reload never sees a change.
func mountFindings(s *kube.Setup, obj string) []engine.Finding {
	var out []engine.Finding
	for _, m := range s.CorefileMounts {
		if m.SubPath == "" {
			continue
		}
		out = append(out, engine.Finding{Code: "LA104-SUBPATH", Severity: engine.SeverityWarn, Object: obj,
			Message:     fmt.Sprintf("container %s mounts the ConfigMap with subPath %q at %s: the kubelet never updates subPath mounts, so edits are not seen until the pods restart, whatever `reload` says", m.Container, m.SubPath, m.MountPath),
			Evidence:    map[string]any{"container": m.Container, "mountPath": m.MountPath, "subPath": m.SubPath},
			Remediation: subPathFix(s, m)})
	}
	if len(s.CorefileMounts) == 0 && (s.DNSWorkload != nil || len(s.DNSPods) > 0) {
		out = append(out, engine.Finding{Code: "LA104-NOT-MOUNTED", Severity: engine.SeverityWarn, Object: obj,
			Message: fmt.Sprintf("the pods of %s do not mount this ConfigMap: the Corefile checked here is not the one they serve", kubeobj.ServiceRef(s.DNSService))})
	}
	return out
}

// fileZoneFindings: the file plugin reloads a zone only when its SOA serial increases; an
// edit that forgets the serial is silently ignored. (A zone file that does not parse stops
// CoreDNS at start-up: startFindings.)
func fileZoneFindings(s *kube.Setup, cf *corefile.Corefile, obj, edit string) []engine.Finding {
	var out []engine.Finding
	for _, zb := range zoneBlocks(cf, s.Zone.FQDN()) {
		for _, fz := range zb.FileZones() {
			p := cf.ResolvePath(zb, fz.Path)
			ev := map[string]any{"line": fz.Line, "file": p}
			msg := fmt.Sprintf("Corefile line %d serves the zone from %s with the file plugin: CoreDNS reloads it only when the SOA serial increases, so an edit that keeps the serial is silently ignored", fz.Line, p)
			if f, ok := cf.Files().Read(p); ok {
				ev["key"] = f.Key
				if serial, err := corefile.ZoneFileSerial(cf.Files(), fz.Zones[0], p, f.Content); err == nil {
					ev["serial"] = serial
					msg += fmt.Sprintf(" (serial now %d)", serial)
				}
			} else if !cf.Files().Known(p) {
				msg += "; the file is not in a ConfigMap of the pod, so its records cannot be read"
			}
			out = append(out, engine.Finding{Code: "LA104-SOA-SERIAL", Severity: engine.SeverityWarn, Object: obj, Message: msg, Evidence: ev,
				Remediation: "# with every edit, raise the SOA serial, e.g. to $(date +%Y%m%d%H) (a practice, not a change a test can prove)\n" + edit + "\n# or serve the zone with the template plugin as the seed does:\n" + commented(remedy.ZoneTemplate(kubeobj.ExternalAddrs(s.DNSService))+"\n"+remedy.CatchAll)})
		}
	}
	return out
}

// subPathFix mounts the volume as the directory above the subPath mount and points -conf at
// the file's name in the volume (the subPath, which the items may have renamed), in one JSON
// patch of the Deployment; the kubelet then updates the file and `reload` sees edits.
func subPathFix(s *kube.Setup, m kube.ConfigMapMount) string {
	dep := s.DNSWorkload
	manual := remedy.Comment(fmt.Sprintf("mount volume %s as the directory %s and point -conf at %s (the fix cannot be proven before it is written)", m.Volume, path.Dir(m.MountPath), path.Join(path.Dir(m.MountPath), m.SubPath)))
	if dep == nil || path.Clean(s.CorefileConf) != path.Clean(m.MountPath) {
		return manual
	}
	for i, c := range dep.Spec.Template.Spec.Containers {
		if c.Name != m.Container {
			continue
		}
		for j, vm := range c.VolumeMounts {
			if vm.Name != m.Volume || vm.MountPath != m.MountPath || vm.SubPath != m.SubPath {
				continue
			}
			field, args := "args", c.Args
			if !slices.Contains(args, "-conf") && !slices.Contains(args, "--conf") {
				field, args = "command", c.Command
			}
			conf := path.Join(path.Dir(m.MountPath), m.SubPath)
			out := slices.Clone(args)
			for k := range out {
				if (out[k] == "-conf" || out[k] == "--conf") && k+1 < len(out) {
					out[k+1] = conf
				}
			}
			base := fmt.Sprintf("/spec/template/spec/containers/%d", i)
			ops := []remedy.PatchOp{{Op: "replace", Path: fmt.Sprintf("%s/volumeMounts/%d", base, j), Value: map[string]any{"name": vm.Name, "mountPath": path.Dir(m.MountPath), "readOnly": true}}}
			if !slices.Equal(out, args) {
				ops = append(ops, remedy.PatchOp{Op: "replace", Path: base + "/" + field, Value: out})
			}
			return kube.ManagedNote(dep, "Deployment", "spec.template.spec.containers") + remedy.JSONPatch(dep.Namespace, "deployment", dep.Name, ops...)
		}
	}
	return manual
}
