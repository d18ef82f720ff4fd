package config

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// CorefileConfig is LA104: the Corefile the DNS pods read serves the zone as the seed does. The
// zone block answers A from a template, `template ANY ANY { rcode NOERROR }` answers every
// other type with NODATA (else AAAA falls through to SERVFAIL and clients may go elsewhere),
// `reload` picks up ConfigMap edits, a "." block on the same port forwards other names
// (systemd-resolved sends any query to any DNS server of the link), no zone-less catch-all
// empties the "." block, the port is the one the Service targets, the ConfigMap is not mounted
// with subPath (never refreshed), and a zone served by the `file` plugin reloads only when
// its SOA serial grows.
func CorefileConfig(env *Env) engine.Check {
	return check(env, "LA104", corefileConfig)
}

func corefileConfig(s *kube.Setup) engine.Outcome {
	if s.ConfigMap == nil {
		if why := s.UnreadReason(kube.ReadKeysIn(s.DNSService.Namespace, "configmaps")...); why != "" {
			return engine.Outcome{Skip: why}
		}
		return engine.Outcome{Skip: "no ConfigMap holding the Corefile was found (name it with --configmap)"}
	}
	obj := kube.ConfigMapRef(s.ConfigMap)
	edit := remedy.EditConfigMap(s.ConfigMap.Namespace, s.ConfigMap.Name)
	if s.CorefileKey == "" {
		return engine.Outcome{Findings: []engine.Finding{missingKeyFinding(s, obj, edit)}}
	}
	if s.CorefileErr != nil {
		ev := map[string]any{"key": s.CorefileKey, "error": s.CorefileErr.Error()}
		msg := "the Corefile does not parse: " + s.CorefileErr.Error() + "; a pod that restarts now crashes, and reload keeps serving the last good version"
		if line, ok := corefileErrLine(s.CorefileErr); ok {
			ev["line"] = line
		}
		return engine.Outcome{Findings: []engine.Finding{{Code: "LA104-SYNTAX", Severity: engine.SeverityFail, Object: obj, Message: msg, Evidence: ev,
			Remediation: edit + "   # fix the Corefile at the line named above"}}}
	}
	cf := s.Corefile
	if cf == nil {
		return engine.Outcome{Err: fmt.Errorf("%s: the Corefile was not parsed by discovery", obj)}
	}
	var findings []engine.Finding
	for _, p := range cf.Problems {
		findings = append(findings, engine.Finding{Code: "LA104-DIRECTIVE", Severity: engine.SeverityFail, Object: obj,
			Message:     fmt.Sprintf("Corefile line %d: %s", p.Line, p.Message),
			Evidence:    map[string]any{"key": s.CorefileKey, "line": p.Line},
			Remediation: edit + fmt.Sprintf("   # line %d", p.Line)})
	}
	for _, imp := range cf.Imports {
		findings = append(findings, engine.Finding{Code: "LA104-IMPORT", Severity: engine.SeverityInfo, Object: obj,
			Message:  fmt.Sprintf("Corefile line %d imports %s from the pod's filesystem: its content is not checked here", imp.Line, imp.Pattern),
			Evidence: map[string]any{"line": imp.Line, "import": imp.Pattern}})
	}
	zoneBlocks := cf.BlocksServing(s.Zone, "")
	if len(zoneBlocks) == 0 {
		findings = append(findings, engine.Finding{Code: "LA104-NO-ZONE-BLOCK", Severity: engine.SeverityFail, Object: obj,
			Message:     fmt.Sprintf("no server block serves the zone %s", s.Zone),
			Evidence:    map[string]any{"zones": corefileZones(cf)},
			Remediation: edit + "\n# add the seed's zone block:\n" + zoneBlockSnippet(s)})
		return engine.Outcome{Findings: findings}
	}
	zb := zoneBlocks[0]
	findings = append(findings, zoneBlockFindings(s, zb, obj, edit)...)
	findings = append(findings, reloadFindings(cf, zb, obj, edit)...)
	findings = append(findings, dotBlockFindings(cf, zb, obj, edit)...)
	findings = append(findings, portFindings(s, zb, obj, edit)...)
	findings = append(findings, mountFindings(s, obj)...)
	findings = append(findings, fileZoneFindings(s, zb, obj, edit)...)
	return engine.Outcome{Findings: findings}
}

func corefileErrLine(err error) (int, bool) {
	if pe, ok := err.(*corefile.ParseError); ok && pe.Line > 0 {
		return pe.Line, true
	}
	return 0, false
}

func missingKeyFinding(s *kube.Setup, obj, edit string) engine.Finding {
	keys := make([]string, 0, len(s.ConfigMap.Data))
	for k := range s.ConfigMap.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	msg := "the ConfigMap holds no Corefile"
	if s.CorefileConf != "" {
		msg = fmt.Sprintf("CoreDNS reads %s, which this ConfigMap does not provide: the pods cannot start", s.CorefileConf)
	}
	return engine.Finding{Code: "LA104-KEY-MISSING", Severity: engine.SeverityFail, Object: obj, Message: msg,
		Evidence:    map[string]any{"keys": keys, "conf": s.CorefileConf},
		Remediation: edit + "   # the key must be the file name given to -conf (usually Corefile)"}
}

func corefileZones(cf *corefile.Corefile) []string {
	var out []string
	for i := range cf.Blocks {
		for _, z := range cf.Blocks[i].Zones() {
			if !slices.Contains(out, z) {
				out = append(out, z)
			}
		}
	}
	return out
}

func zoneBlockSnippet(s *kube.Setup) string {
	port := "53"
	if t := dnsTargetPorts(s); len(t) > 0 {
		port = strconv.Itoa(int(t[0]))
	}
	return remedy.ZoneBlock(s.Zone, port, kube.ExternalAddrs(s.DNSService))
}

// zoneBlockFindings: the block answers A from a template before any catch-all, with answers
// for the name asked, and answers every other type with NODATA.
func zoneBlockFindings(s *kube.Setup, zb *corefile.ServerBlock, obj, edit string) []engine.Finding {
	var out []engine.Finding
	label := zb.Label()
	if !zb.HasTemplateA() {
		if len(zb.FileZones()) > 0 {
			return append(out, engine.Finding{Code: "LA104-ZONE-FILE", Severity: engine.SeverityInfo, Object: obj,
				Message: fmt.Sprintf("%s answers from a zone file rather than a template: LA101 cannot compare its A records (LA301 asks them live)", label)})
		}
		return append(out, engine.Finding{Code: "LA104-NO-TEMPLATE-A", Severity: engine.SeverityFail, Object: obj,
			Message:     fmt.Sprintf("%s has no `template IN A`: A queries of the zone are not answered with the node addresses", label),
			Evidence:    map[string]any{"line": zb.Line, "plugins": blockPluginNames(zb)},
			Remediation: edit + "\n# the zone block of the seed:\n" + zoneBlockSnippet(s)})
	}
	first, _ := zb.TemplateFor("IN", "A")
	if first.CatchAll() {
		var a corefile.Template
		for _, t := range zb.Templates {
			if t.Matches("IN", "A") && !t.CatchAll() {
				a = t
				break
			}
		}
		out = append(out, engine.Finding{Code: "LA104-CATCH-ALL-FIRST", Severity: engine.SeverityFail, Object: obj,
			Message:     fmt.Sprintf("%s comes before %s: CoreDNS tries template entries in order, so A queries get an empty answer", first.Label(), a.Label()),
			Evidence:    map[string]any{"catchAllLine": first.Line, "templateALine": a.Line},
			Remediation: edit + fmt.Sprintf("   # move the block at line %d after the one at line %d", first.Line, a.Line)})
	} else {
		if len(first.Answers) == 0 && first.Rcode == "" {
			out = append(out, engine.Finding{Code: "LA104-TEMPLATE-A-EMPTY", Severity: engine.SeverityFail, Object: obj,
				Message:     fmt.Sprintf("%s has no answer: A queries get an empty answer", first.Label()),
				Remediation: edit + "\n" + zoneBlockSnippet(s)})
		}
		for _, a := range first.Answers {
			if a.Static && a.Err == "" && !a.OwnerIsQueryName {
				out = append(out, engine.Finding{Code: "LA104-FIXED-OWNER", Severity: engine.SeverityWarn, Object: obj,
					Message:     fmt.Sprintf("Corefile line %d: the answer's owner is fixed (%q) instead of {{ .Name }}: a client asking another name gets a record for a different name and discards it", a.Line, a.Text),
					Evidence:    map[string]any{"line": a.Line, "answer": a.Text},
					Remediation: edit + fmt.Sprintf("   # line %d: answer \"{{ .Name }} 60 IN A %s\"", a.Line, a.Data)})
			}
			if !a.Static {
				out = append(out, engine.Finding{Code: "LA104-DYNAMIC-ANSWER", Severity: engine.SeverityInfo, Object: obj,
					Message:  fmt.Sprintf("Corefile line %d: the answer depends on the query, so its addresses are not compared here (LA301 asks live)", a.Line),
					Evidence: map[string]any{"line": a.Line, "answer": a.Text}})
			}
		}
	}
	other, ok := zb.TemplateFor("IN", "AAAA")
	switch {
	case !ok:
		out = append(out, engine.Finding{Code: "LA104-NO-CATCH-ALL", Severity: engine.SeverityFail, Object: obj,
			Message:     fmt.Sprintf("%s lacks `%s`: AAAA and other queries of the zone fall through and get SERVFAIL, and clients may try another resolver that returns the public address", label, "template ANY ANY { rcode NOERROR }"),
			Evidence:    map[string]any{"line": zb.Line},
			Remediation: edit + "\n# add inside the zone block, after template IN A:\n" + remedy.CatchAll})
	case other.Fallthrough:
		out = append(out, engine.Finding{Code: "LA104-CATCH-ALL-FALLTHROUGH", Severity: engine.SeverityFail, Object: obj,
			Message:     fmt.Sprintf("%s falls through: AAAA queries of the zone reach no plugin and get SERVFAIL", other.Label()),
			Remediation: edit + "\n" + remedy.CatchAll})
	case other.Rcode != "" && other.Rcode != "NOERROR":
		out = append(out, engine.Finding{Code: "LA104-CATCH-ALL-RCODE", Severity: engine.SeverityFail, Object: obj,
			Message:     fmt.Sprintf("%s answers %s: for AAAA that tells clients the name does not exist at all (negative caching), instead of NODATA", other.Label(), other.Rcode),
			Evidence:    map[string]any{"line": other.Line, "rcode": other.Rcode},
			Remediation: edit + "\n" + remedy.CatchAll})
	}
	return out
}

func blockPluginNames(b *corefile.ServerBlock) []string {
	var out []string
	for _, p := range b.Plugins {
		out = append(out, p.Name)
	}
	return out
}

// reloadFindings: without reload, ConfigMap edits wait for the next pod restart.
func reloadFindings(cf *corefile.Corefile, zb *corefile.ServerBlock, obj, edit string) []engine.Finding {
	var out []engine.Finding
	blocks := []*corefile.ServerBlock{zb}
	for _, p := range zb.Ports() {
		blocks = append(blocks, cf.BlocksServing(".", p)...)
	}
	for _, b := range blocks {
		if b.HasReload() {
			continue
		}
		out = append(out, engine.Finding{Code: "LA104-NO-RELOAD", Severity: engine.SeverityWarn, Object: obj,
			Message:     fmt.Sprintf("%s has no `reload`: edits of the ConfigMap take effect only when the pods restart", b.Label()),
			Evidence:    map[string]any{"line": b.Line},
			Remediation: edit + fmt.Sprintf("   # add `reload` in the block at line %d", b.Line)})
	}
	return out
}

// dotBlockFindings: a "." block on the zone's port forwards every other name, and has no
// template without zone that would answer every name empty.
func dotBlockFindings(cf *corefile.Corefile, zb *corefile.ServerBlock, obj, edit string) []engine.Finding {
	var out []engine.Finding
	for _, port := range zb.Ports() {
		dots := cf.BlocksServing(".", port)
		if len(dots) == 0 {
			out = append(out, engine.Finding{Code: "LA104-NO-DOT-BLOCK", Severity: engine.SeverityFail, Object: obj,
				Message:     fmt.Sprintf("no \".\" block on port %s: names outside the zone are refused, and systemd-resolved sends any query to any DNS server of the link", port),
				Evidence:    map[string]any{"zones": corefileZones(cf)},
				Remediation: edit + "\n# add after the zone block:\n" + remedy.DotBlock(port)})
			continue
		}
		dot := dots[0]
		if !dot.ForwardsDot() {
			out = append(out, engine.Finding{Code: "LA104-DOT-NO-FORWARD", Severity: engine.SeverityFail, Object: obj,
				Message:     fmt.Sprintf("%s does not forward (`forward . UPSTREAM`): names outside the zone are not resolved", dot.Label()),
				Evidence:    map[string]any{"line": dot.Line, "plugins": blockPluginNames(dot)},
				Remediation: edit + fmt.Sprintf("   # add `forward . /etc/resolv.conf` in the block at line %d", dot.Line)})
		}
		for _, t := range dot.Templates {
			if t.ExplicitZones {
				continue
			}
			sev := engine.SeverityWarn
			msg := fmt.Sprintf("%s in %s has no zone, so it applies to every name this server is asked", t.Label(), dot.Label())
			if t.CatchAll() {
				sev = engine.SeverityFail
				msg += ": every query of a workstation gets an empty answer and all its resolution breaks"
			}
			out = append(out, engine.Finding{Code: "LA104-ZONELESS-TEMPLATE", Severity: sev, Object: obj, Message: msg,
				Evidence:    map[string]any{"line": t.Line},
				Remediation: edit + fmt.Sprintf("   # move the template at line %d into the zone block, or give it zones: template %s %s %s", t.Line, t.Class, t.Type, strings.TrimSuffix(zb.Zones()[0], "."))})
		}
	}
	return out
}

// targetPorts are the container ports the DNS Service's port 53 reaches.
func dnsTargetPorts(s *kube.Setup) []int32 {
	spec := dnsPodSpec(s)
	var out []int32
	for _, sp := range s.DNSService.Spec.Ports {
		if sp.Port != 53 {
			continue
		}
		if t := kube.ResolveTargetPort(sp, spec); t.Port > 0 && !slices.Contains(out, t.Port) {
			out = append(out, t.Port)
		}
	}
	return out
}

// portFindings: CoreDNS listens on the port the Service sends queries to. When the
// container declares the Corefile's port, the Service is the one to fix (LA103 says so).
func portFindings(s *kube.Setup, zb *corefile.ServerBlock, obj, edit string) []engine.Finding {
	targets := dnsTargetPorts(s)
	if len(targets) == 0 {
		return nil // LA103 reports the Service ports
	}
	declared := dnsDeclaredPorts(s)
	var out []engine.Finding
	for _, p := range zb.Ports() {
		n, err := strconv.Atoi(p)
		if err != nil {
			out = append(out, engine.Finding{Code: "LA104-PORT-FROM-ENV", Severity: engine.SeverityInfo, Object: obj,
				Message: fmt.Sprintf("%s listens on %s, set in the pod's environment: not compared with the Service's target port", zb.Label(), p)})
			continue
		}
		if slices.Contains(targets, int32(n)) || slices.Contains(declared, int32(n)) {
			continue
		}
		out = append(out, engine.Finding{Code: "LA104-PORT-MISMATCH", Severity: engine.SeverityFail, Object: obj,
			Message:     fmt.Sprintf("%s listens on port %d, but %s sends queries to port %s: nothing answers them", zb.Label(), n, kube.ServiceRef(s.DNSService), joinPorts(targets)),
			Evidence:    map[string]any{"corefilePort": n, "targetPorts": targets, "line": zb.Line},
			Remediation: edit + fmt.Sprintf("   # write the blocks as %s:%d and .:%d", strings.TrimSuffix(s.Zone, "."), targets[0], targets[0])})
	}
	return out
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
	var out []string
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
			Message:  fmt.Sprintf("container %s mounts the ConfigMap with subPath %q at %s: the kubelet never updates subPath mounts, so edits are not seen until the pods restart, whatever `reload` says", m.Container, m.SubPath, m.MountPath),
			Evidence: map[string]any{"container": m.Container, "mountPath": m.MountPath, "subPath": m.SubPath},
			Remediation: fmt.Sprintf("# mount the volume as a directory and point -conf at the file:\nvolumeMounts:\n  - {name: %s, mountPath: %s, readOnly: true}\nargs: [\"-conf\", \"%s/%s\"]",
				m.Volume, path.Dir(m.MountPath), path.Dir(m.MountPath), path.Base(m.MountPath))})
	}
	if len(s.CorefileMounts) == 0 && (s.DNSWorkload != nil || len(s.DNSPods) > 0) {
		out = append(out, engine.Finding{Code: "LA104-NOT-MOUNTED", Severity: engine.SeverityWarn, Object: obj,
			Message: fmt.Sprintf("the pods of %s do not mount this ConfigMap: the Corefile checked here is not the one they serve", kube.ServiceRef(s.DNSService))})
	}
	return out
}

// fileZoneFindings: the file plugin reloads a zone only when its SOA serial increases; an
// edit that forgets the serial is silently ignored.
func fileZoneFindings(s *kube.Setup, zb *corefile.ServerBlock, obj, edit string) []engine.Finding {
	var out []engine.Finding
	for _, fz := range zb.FileZones() {
		ev := map[string]any{"line": fz.Line, "file": fz.Path}
		msg := fmt.Sprintf("Corefile line %d serves the zone from %s with the file plugin: CoreDNS reloads it only when the SOA serial increases, so an edit that keeps the serial is silently ignored", fz.Line, fz.Path)
		if key, text, ok := zoneFileInConfigMap(s, fz.Path); ok {
			ev["key"] = key
			serial, err := corefile.ZoneFileSerial(fz.Zones[0], key, text)
			if err != nil {
				out = append(out, engine.Finding{Code: "LA104-ZONE-FILE-SYNTAX", Severity: engine.SeverityFail, Object: obj,
					Message:     fmt.Sprintf("zone file %s (key %s) does not parse: %v", fz.Path, key, err),
					Evidence:    ev,
					Remediation: edit + "   # fix the zone file at the line named above"})
				continue
			}
			ev["serial"] = serial
			msg += fmt.Sprintf(" (serial now %d)", serial)
		}
		out = append(out, engine.Finding{Code: "LA104-SOA-SERIAL", Severity: engine.SeverityWarn, Object: obj, Message: msg, Evidence: ev,
			Remediation: "# with every edit, raise the SOA serial, e.g. to $(date +%Y%m%d%H)\n" + edit + "\n# or serve the zone with the template plugin as the seed does:\n" + zoneBlockSnippet(s)})
	}
	return out
}

// zoneFileInConfigMap finds the ConfigMap key a zone file path is mounted from.
func zoneFileInConfigMap(s *kube.Setup, file string) (string, string, bool) {
	if !path.IsAbs(file) && s.CorefileConf != "" {
		file = path.Join(path.Dir(s.CorefileConf), file)
	}
	file = path.Clean(file)
	for _, m := range s.CorefileMounts {
		rel := ""
		switch dir := path.Clean(m.MountPath); {
		case m.SubPath != "" && file == dir:
			rel = m.SubPath
		case m.SubPath == "" && strings.HasPrefix(file, dir+"/"):
			rel = strings.TrimPrefix(file, dir+"/")
		default:
			continue
		}
		key := rel
		for k, p := range m.Items {
			if path.Clean(p) == rel {
				key = k
			}
		}
		if text, ok := s.ConfigMap.Data[key]; ok {
			return key, text, true
		}
	}
	return "", "", false
}
