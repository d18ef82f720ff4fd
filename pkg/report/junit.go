package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// JUnit types follow the common Ant/Jenkins schema that CI systems (GitHub, GitLab, Jenkins)
// read: one testsuite per command, one testcase per check.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",chardata"`
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// WriteJUnit writes one testcase per check. A warning is a failure only with FailOnWarn, as
// in the exit code; otherwise its findings go to system-out so they are still visible.
func WriteJUnit(w io.Writer, r Report) error {
	suite := junitSuite{Name: "kubectl-lanaccess " + r.Command}
	var total time.Duration
	props := make([]junitProperty, 0, 2+len(r.Subject))
	props = append(props, junitProperty{Name: "context", Value: r.Cluster.Context}, junitProperty{Name: "server", Value: r.Cluster.Server})
	for _, kv := range r.Subject {
		props = append(props, junitProperty{Name: kv.Key, Value: kv.Value})
	}
	suite.Properties = props
	for _, res := range r.Results {
		total += res.Duration
		c := junitCase{
			Name:      res.ID + " " + res.Title,
			Classname: r.Command + "." + strings.ReplaceAll(Section(res), " ", "_"),
			Time:      seconds(res.Duration),
		}
		body := findingsText(res.Findings)
		switch {
		case res.Status == engine.StatusFail, res.Status == engine.StatusWarn && r.FailOnWarn:
			c.Failure = &junitMessage{Message: firstProblem(res), Type: strings.ToUpper(string(res.Status)), Body: body}
			suite.Failures++
		case res.Status == engine.StatusError:
			c.Error = &junitMessage{Message: res.Reason, Type: "ERROR", Body: body}
			suite.Errors++
		case res.Status == engine.StatusSkip:
			c.Skipped = &junitMessage{Message: res.Reason}
			suite.Skipped++
		default:
			c.SystemOut = body
		}
		suite.Cases = append(suite.Cases, c)
	}
	suite.Tests = len(suite.Cases)
	suite.Time = seconds(total)
	doc := junitSuites{
		Name: suite.Name, Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors,
		Skipped: suite.Skipped, Time: suite.Time, Suites: []junitSuite{suite},
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func firstProblem(res engine.Result) string {
	for _, f := range res.Findings {
		if f.Severity == engine.SeverityFail || f.Severity == engine.SeverityWarn {
			if f.Object != "" {
				return f.Object + ": " + f.Message
			}
			return f.Message
		}
	}
	return string(res.Status)
}

func findingsText(fs []engine.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "%s", strings.ToUpper(string(f.Severity)))
		if f.Object != "" {
			fmt.Fprintf(&b, " %s:", f.Object)
		}
		fmt.Fprintf(&b, " %s\n", f.Message)
		if ev := evidenceText(f.Evidence); ev != "" {
			fmt.Fprintf(&b, "  evidence: %s\n", ev)
		}
		if f.Remediation != "" {
			fmt.Fprintf(&b, "  fix: %s\n", strings.ReplaceAll(f.Remediation, "\n", "\n       "))
		}
	}
	return b.String()
}
