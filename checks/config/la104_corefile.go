package config

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// CorefileConfig is LA104: the Corefile the DNS pods read, as CoreDNS v1.14.7 reads it (imports
// expanded from the pods' ConfigMaps, every plugin argument checked as at start-up), makes
// CoreDNS start and answer the zone as the seed does. Its query model says what CoreDNS does
// on the port the DNS Service reaches: A for names of the zone gets the addresses from a
// template, AAAA and every other type NODATA (never SERVFAIL, which sends clients to another
// resolver, and never forwarded, which gives them the public address), names outside the zone
// are forwarded (systemd-resolved sends any query to any DNS server of the link). `reload` is
// process-wide: one block with it reloads all. The ConfigMap is not mounted with subPath
// (never refreshed), and a zone served by the `file` plugin reloads only when its SOA serial
// grows.
func CorefileConfig(env *Env) engine.Check {
	return check(env, "LA104", corefileConfig)
}

func corefileConfig(s *kube.Setup) engine.Outcome {
	if s.ConfigMap == nil {
		if why := unreadOf(s, "LA104", s.DNSService.Namespace); why != "" {
			return engine.Outcome{Skip: why}
		}
		return engine.Outcome{Skip: "no ConfigMap holding the Corefile was found (name it with --configmap)"}
	}
	obj := kubeobj.ConfigMapRef(s.ConfigMap)
	edit := remedy.EditConfigMap(s.ConfigMap.Namespace, s.ConfigMap.Name)
	if s.CorefileKey == "" {
		return engine.Outcome{Findings: []engine.Finding{missingKeyFinding(s, obj, edit)}}
	}
	if s.CorefileErr != nil {
		return engine.Outcome{Findings: []engine.Finding{parseErrorFinding(s, obj)}}
	}
	cf := s.Corefile
	if cf == nil {
		return engine.Outcome{Err: fmt.Errorf("%s: the Corefile was not parsed by discovery", obj)}
	}
	findings := append(importFindings(s, cf, obj), buildFindings(cf, obj)...)
	if !cf.Starts() {
		return engine.Outcome{Findings: append(findings, startFindings(s, cf)...)}
	}
	if len(cf.Unchecked) > 0 {
		findings = append(findings, engine.Finding{Code: "LA104-UNCHECKED", Severity: engine.SeverityInfo, Object: obj,
			Message:  fmt.Sprintf("the arguments of %s are not checked against CoreDNS's start-up rules here", strings.Join(cf.Unchecked, ", ")),
			Evidence: map[string]any{"plugins": cf.Unchecked}})
	}
	port := s.ZonePort()
	if !s.Zone.IsZero() && port != "" && !corefilePortFromEnv(port) {
		findings = append(findings, zoneFindings(s, cf, port)...)
		findings = append(findings, sourceFindings(s, cf, port)...)
		findings = append(findings, outsideFindings(s, cf, port)...)
		findings = append(findings, clusterNamesFindings(s, cf, port)...)
	}
	findings = append(findings, reloadFindings(s, cf)...)
	findings = append(findings, portFindings(s, cf, obj, edit)...)
	findings = append(findings, mountFindings(s, obj)...)
	findings = append(findings, fileZoneFindings(s, cf, obj, edit)...)
	return engine.Outcome{Findings: findings}
}

// buildFindings: an image that is not a stock CoreDNS of a known version (a build of its own, a
// digest, latest) may know other plugins and answer otherwise: the judgement below is CoreDNS
// v1.14.7's, which it may not be (docs/semantics.md 6.1).
func buildFindings(cf *corefile.Corefile, obj string) []engine.Finding {
	b := cf.Build()
	if b.Known() {
		return nil
	}
	return []engine.Finding{{Code: "LA104-IMAGE-UNKNOWN", Severity: engine.SeverityWarn, Object: obj,
		Message:  fmt.Sprintf("the DNS pods run %s, which is not a stock CoreDNS image of a known version: whether it starts and what its plugins answer is judged here as CoreDNS v1.14.7, which it may not be", b.Image),
		Evidence: map[string]any{"image": b.Image}}}
}

func corefilePortFromEnv(p string) bool { _, err := strconv.Atoi(p); return err != nil }

func missingKeyFinding(s *kube.Setup, obj, edit string) engine.Finding {
	keys := make([]string, 0, len(s.ConfigMap.Data))
	for k := range s.ConfigMap.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	msg := "the ConfigMap holds no Corefile"
	if s.CorefileConf != "" {
		msg = fmt.Sprintf("CoreDNS reads %s, which this ConfigMap does not provide: the pods cannot start", s.CorefileConf)
		if c := kube.CoreDNSContainer(dnsPodSpec(s)); c != nil && !kube.StartedWithConf(c) {
			msg = fmt.Sprintf("CoreDNS is started without -conf: it reads %s, which the pod does not have, and serves its built-in default (whoami on :53) instead of this ConfigMap", s.CorefileConf)
		}
	}
	return engine.Finding{Code: "LA104-KEY-MISSING", Severity: engine.SeverityFail, Object: obj, Message: msg,
		Evidence:    map[string]any{"keys": keys, "conf": s.CorefileConf},
		Remediation: edit + "   # the key must be the file name given to -conf (usually Corefile)"}
}

// parseErrorFinding: CoreDNS cannot read the configuration (caddy's parser stops: a syntax
// error, an unknown directive, an import it cannot read). The file named may be an imported one.
func parseErrorFinding(s *kube.Setup, obj string) engine.Finding {
	ev := map[string]any{"key": s.CorefileKey, "error": s.CorefileErr.Error()}
	code := "LA104-SYNTAX"
	where := remedy.EditConfigMap(s.ConfigMap.Namespace, s.ConfigMap.Name)
	if pe, ok := errors.AsType[*corefile.ParseError](s.CorefileErr); ok {
		if pe.Line > 0 {
			ev["line"] = pe.Line
		}
		if pe.File != "" {
			ev["file"] = pe.File
			if f, ok := corefileSource(s, pe.File); ok {
				obj = kubeobj.ConfigMapRef(f.CM)
				where = remedy.EditConfigMap(f.CM.Namespace, f.CM.Name)
				ev["key"] = f.Key
			}
		}
		if strings.HasPrefix(pe.Msg, "Unknown directive") {
			code = "LA104-DIRECTIVE"
		}
		if pe.Unknown {
			return engine.Finding{Code: "LA104-CANNOT-TELL", Severity: engine.SeverityWarn, Object: obj, Evidence: ev,
				Message: "whether CoreDNS starts and what it answers cannot be told: " + pe.Error()}
		}
	}
	msg := "CoreDNS cannot read its configuration: " + s.CorefileErr.Error() + "; a pod that restarts now crashes, and reload keeps serving the last good version"
	return engine.Finding{Code: code, Severity: engine.SeverityFail, Object: obj, Message: msg, Evidence: ev,
		Remediation: where + "   # fix the line named above (the fix cannot be proven before the file is written)"}
}

// importFindings: what the Corefile imports (information), and imports of paths the API does
// not show, whose content decides what CoreDNS serves (cannot tell).
func importFindings(s *kube.Setup, cf *corefile.Corefile, obj string) []engine.Finding {
	var out []engine.Finding
	for _, imp := range cf.Imports {
		if imp.Snippet {
			continue
		}
		ev := map[string]any{"line": imp.Line, "import": imp.Pattern, "matched": imp.Matched}
		where := fmt.Sprintf("line %d", imp.Line)
		if imp.File != "" {
			where = imp.File + " " + where
		}
		if imp.Unknown != "" {
			out = append(out, engine.Finding{Code: "LA104-IMPORT-UNREAD", Severity: engine.SeverityWarn, Object: obj, Evidence: ev,
				Message:     fmt.Sprintf("Corefile %s imports %s: %s, so what it adds to the configuration cannot be told", where, imp.Pattern, imp.Unknown),
				Remediation: "# mount the imported files from a ConfigMap, or check them in the pod:\n" + remedy.Kubectl(s.DNSService.Namespace, "exec", "deploy/"+workloadName(s), "--", "ls", path.Dir(imp.Pattern))})
			continue
		}
		var from []string
		for _, m := range imp.Matched {
			if f, ok := cf.Files().Read(m); ok {
				from = append(from, fmt.Sprintf("%s (%s)", m, f.From()))
			}
		}
		msg := fmt.Sprintf("Corefile %s imports %s, which matches nothing: CoreDNS logs a warning and goes on", where, imp.Pattern)
		if len(from) > 0 {
			msg = fmt.Sprintf("Corefile %s imports %s: %s, read and checked with the Corefile", where, imp.Pattern, strings.Join(from, ", "))
		}
		out = append(out, engine.Finding{Code: "LA104-IMPORT", Severity: engine.SeverityInfo, Object: obj, Message: msg, Evidence: ev})
	}
	return out
}

func workloadName(s *kube.Setup) string {
	if s.DNSWorkload != nil {
		return s.DNSWorkload.Name
	}
	return "<dns deployment>"
}

// startFindings: what CoreDNS refuses at start-up, in the order it checks (the first is what
// the pod logs). A zone defined twice is named with both places, and the fix removes the copy
// that is not in an imported file: never a block added beside one an import defines.
func startFindings(s *kube.Setup, cf *corefile.Corefile) []engine.Finding {
	out := make([]engine.Finding, 0, len(cf.Problems))
	for i, p := range cf.Problems {
		f, ok := corefileSource(s, p.File)
		obj := kubeobj.ConfigMapRef(s.ConfigMap)
		if ok {
			obj = kubeobj.ConfigMapRef(f.CM)
		}
		msg := "CoreDNS refuses to start: " + p.String()
		if i == 0 {
			msg += "; this is the error the pods log, and a pod that restarts now crashes (reload keeps serving the last good version)"
		}
		finding := engine.Finding{Code: "LA104-DIRECTIVE", Severity: engine.SeverityFail, Object: obj, Message: msg,
			Evidence: map[string]any{"file": p.File, "line": p.Line, "error": p.Message}}
		if strings.HasPrefix(p.Message, "plugin/file: failed to parse file") || strings.HasPrefix(p.Message, "plugin/file: file ") {
			finding.Code = "LA104-ZONE-FILE-SYNTAX"
		}
		if strings.Contains(p.Message, "it is already defined") || strings.Contains(p.Message, "zone overlap") {
			finding.Code = "LA104-ZONE-DEFINED-TWICE"
			finding.Message, finding.Remediation = duplicateZone(s, cf, p)
		} else if e, ok := reloadIntervalFix(s, cf, p); ok {
			finding.Remediation = e.Remediation()
		} else if ok {
			finding.Remediation = remedy.EditConfigMap(f.CM.Namespace, f.CM.Name) + "   " + remedy.Comment(p.String()+": the fix cannot be proven before it is written")
		}
		out = append(out, finding)
	}
	return out
}

// duplicateZone names every block serving the zone on the port of the problem, and removes the
// one written in the Corefile itself when another comes from an imported file (k3s's
// coredns-custom is where the zone belongs; the coredns ConfigMap is k3s's).
func duplicateZone(s *kube.Setup, cf *corefile.Corefile, p corefile.Problem) (string, string) {
	var blocks []*corefile.ServerBlock
	var dup *corefile.ServerBlock
	for i := range cf.Blocks {
		b := &cf.Blocks[i]
		if b.File == p.File && b.Line == p.Line {
			dup = b
		}
	}
	if dup == nil {
		return "CoreDNS refuses to start: " + p.String(), ""
	}
	for i := range cf.Blocks {
		b := &cf.Blocks[i]
		for _, a := range dup.Addresses {
			for _, ba := range b.Addresses {
				if a.Zone == ba.Zone && a.Port == ba.Port && a.Transport == ba.Transport && !slices.Contains(blocks, b) {
					blocks = append(blocks, b)
				}
			}
		}
	}
	var labels []string
	for _, b := range blocks {
		label := b.Label()
		if f, ok := corefileSource(s, b.File); ok {
			label += " in " + kubeobj.ConfigMapRef(f.CM) + " key " + f.Key
		}
		labels = append(labels, label)
	}
	msg := fmt.Sprintf("CoreDNS refuses to start: %s; the zone is defined by %s: keep one of them, never add another", p, strings.Join(labels, " and "))
	var remove *corefile.ServerBlock
	for _, b := range blocks {
		if b.File == "" && b.EndLine > 0 {
			remove = b
		}
	}
	if remove == nil || len(blocks) < 2 {
		return msg, remedy.EditConfigMap(s.ConfigMap.Namespace, s.ConfigMap.Name) + "   # remove one of the blocks named above"
	}
	f, ok := corefileSource(s, "")
	if !ok {
		return msg, ""
	}
	e := replaceLines(f, remove.Line, remove.EndLine, "", fmt.Sprintf("remove %s, which another file already defines", remove.Label()))
	return msg, e.Remediation()
}

// reloadIntervalFix: `reload` below its 2s minimum is written back as `reload 2s`.
func reloadIntervalFix(s *kube.Setup, cf *corefile.Corefile, p corefile.Problem) (corefileEdit, bool) {
	if !strings.HasPrefix(p.Message, "plugin/reload: interval value must be") {
		return corefileEdit{}, false
	}
	f, ok := corefileSource(s, p.File)
	if !ok {
		return corefileEdit{}, false
	}
	for i := range cf.Blocks {
		for _, pl := range cf.Blocks[i].PluginsNamed("reload") {
			if pl.File == p.File && pl.Line == p.Line && pl.EndLine == pl.Line {
				line := indentOf(f.Text, pl.Line) + "reload 2s"
				return replaceLines(f, pl.Line, pl.Line, line, fmt.Sprintf("write line %d as", pl.Line)), true
			}
		}
	}
	return corefileEdit{}, false
}
