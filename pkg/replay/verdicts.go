package replay

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Verdicts is the part of a run's JSON report that a replay must reproduce: each check's
// status, and each finding's code, severity, object and remediation, one per line (the
// remediation indented under its finding). Messages and evidence are left out: they carry
// timings, which a replay gives back as recorded but a live run measures anew; the random
// labels the probes ask (lanaccess-probe-<8>, lanaccess-<8 hex>) read RANDOM, as they differ
// from run to run by design. It is the format of testdata/replays/<case>/expect.
func Verdicts(jsonReport []byte) (string, error) {
	var doc struct {
		Command string `json:"command"`
		Checks  []struct {
			ID       string `json:"id"`
			Status   string `json:"status"`
			Findings []struct {
				Code        string `json:"code"`
				Severity    string `json:"severity"`
				Object      string `json:"object"`
				Remediation string `json:"remediation"`
			} `json:"findings"`
		} `json:"checks"`
	}
	if err := json.Unmarshal(jsonReport, &doc); err != nil {
		return "", fmt.Errorf("not a JSON report: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s verdicts: each check's status; under it, each finding's code, severity, object and fix\n", doc.Command)
	for _, c := range doc.Checks {
		fmt.Fprintf(&b, "%s %s\n", c.ID, c.Status)
		for _, f := range c.Findings {
			fmt.Fprintf(&b, "  %s %s %s\n", f.Code, f.Severity, f.Object)
			if f.Remediation != "" {
				for line := range strings.SplitSeq(strings.TrimRight(f.Remediation, "\n"), "\n") {
					fmt.Fprintf(&b, "    | %s\n", line)
				}
			}
		}
	}
	return randomLabel().ReplaceAllStringFunc(b.String(), func(m string) string { return normalize(m) }), nil
}
