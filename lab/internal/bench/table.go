package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/textout"
)

// Report is everything one `make bench` measured.
type Report struct {
	Date    string
	Machine string
	// LoadStart and LoadEnd are the machine's 1-minute load average when the run began and
	// ended (the lab shares its CPUs with whatever else runs there; 0: unknown).
	LoadStart, LoadEnd float64
	Runs               int
	ProbeTimeout       time.Duration

	Healthy  TimedPair
	Dead     TimedPair
	DeadNode string
	Many     TimedPair
	Small    ScaleRow
	Loaded   ScaleRow
	Startup  Startup
	// Monitor and Scrape are `kubectl lanaccess monitor` after many runs, and scraped with many
	// addresses (issue 17).
	Monitor MonitorSoak
	Scrape  MonitorScrape
	// Commands are vpn-trace on the broken lab and the full doctor (issue 27).
	Commands []CommandRow
	// HopTimeout is vpn-trace's --hop-timeout default, the unit of its target.
	HopTimeout time.Duration
	Skipped    []string // scenarios not run, and why
}

// Target is one goal of issue 8 and where this run stands.
type Target struct {
	Goal   string
	Actual string
	Met    bool
}

// Targets judges the report against the goals (issue 8's, tightened by issue 27's).
func (r Report) Targets() []Target {
	var out []Target
	if len(r.Healthy.Doctor) > 0 && len(r.Healthy.Manual) > 0 {
		ratio := r.Healthy.Doctor.Median() / r.Healthy.Manual.Median()
		out = append(out, Target{"healthy: doctor at most 0.35x the manual script's time",
			fmt.Sprintf("%s vs %s (%.2fx)", fmtDur(r.Healthy.Doctor.Median()), fmtDur(r.Healthy.Manual.Median()), ratio), ratio <= 0.35})
		out = append(out, Target{"healthy: doctor's CPU at most 40 ms", fmtDur(r.Healthy.DoctorCPU.Median()), r.Healthy.DoctorCPU.Median() <= 0.040})
	}
	if len(r.Dead.Doctor) > 0 && len(r.Healthy.Doctor) > 0 {
		added := r.Dead.Doctor.Median() - r.Healthy.Doctor.Median()
		out = append(out, Target{fmt.Sprintf("one dead address adds at most one probe timeout (%s)", r.ProbeTimeout),
			"+" + fmtDur(added), added <= r.ProbeTimeout.Seconds()})
	}
	if len(r.Many.Doctor) > 0 && len(r.Healthy.Doctor) > 0 {
		ratio := r.Many.Doctor.Median() / r.Healthy.Doctor.Median()
		out = append(out, Target{fmt.Sprintf("%d addresses at most 1.3x the time of %d", r.Many.Addresses, r.Healthy.Addresses),
			fmt.Sprintf("%.2fx", ratio), ratio <= 1.3})
	}
	if len(r.Small.API) > 0 {
		out = append(out, Target{"API requests, healthy: at most 40", fmt.Sprintf("%d (%s)", r.Small.API[0].Total, r.Small.API[0].Verbs()), r.Small.API[0].Total <= 40})
		for _, row := range []ScaleRow{r.Small, r.Loaded} {
			if len(row.DoctorRSS) > 0 {
				out = append(out, Target{fmt.Sprintf("peak memory at most 40 MB, %d Services", row.Services), row.DoctorRSS.MB(), row.DoctorRSS.Median() <= 40})
			}
		}
	}
	if len(r.Loaded.API) > 0 && len(r.Small.API) > 0 {
		s, l := r.Small.API[0], r.Loaded.API[0]
		// Only extra pages of the cluster-wide LISTs may grow: one per 500 more objects.
		extraPages := pages(r.Loaded.Services) - pages(r.Small.Services)
		flat := l.ByVerb["get"] <= s.ByVerb["get"] && l.Total-s.Total <= extraPages
		out = append(out, Target{"API requests flat as the cluster grows (no per-object GETs; pages only)",
			fmt.Sprintf("%d -> %d requests (get %d -> %d; %d more LIST pages allowed)", s.Total, l.Total, s.ByVerb["get"], l.ByVerb["get"], extraPages), flat})
		growth := r.Loaded.DoctorRSS.Median() / r.Small.DoctorRSS.Median()
		out = append(out, Target{"memory flat as the cluster grows (at most 1.25x)",
			fmt.Sprintf("%.1f -> %.1f MB (%.2fx)", r.Small.DoctorRSS.Median(), r.Loaded.DoctorRSS.Median(), growth), growth <= 1.25})
	}
	if len(r.Startup.Version) > 0 {
		out = append(out, Target{"version at most 12 ms", fmtDur(r.Startup.Version.Median()), r.Startup.Version.Median() <= 0.012})
		out = append(out, Target{"binary at most 45 MB", fmt.Sprintf("%.1f MB", r.Startup.BinaryMB), r.Startup.BinaryMB <= 45})
	}
	if len(r.Commands) > 0 && len(r.Commands[0].Wall) > 0 && r.HopTimeout > 0 {
		limit := r.HopTimeout + time.Second
		out = append(out, Target{fmt.Sprintf("vpn-trace on the broken lab at most one hop timeout + 1 s (%s)", fmtDur(limit.Seconds())),
			fmtDur(r.Commands[0].Wall.Median()), r.Commands[0].Wall.Median() <= limit.Seconds()})
	}
	if m := r.Monitor; m.Late > 0 {
		out = append(out, Target{fmt.Sprintf("monitor: resident memory after %d runs at most 1.10x that after %d", m.Late, m.Early),
			fmt.Sprintf("%.1f -> %.1f MB (%.2fx)", m.EarlyRSSMB, m.LateRSSMB, m.Growth()), m.Growth() <= 1.10})
	}
	return out
}

func pages(n int) int { return int(math.Ceil(float64(n) / 500)) }

// WriteTable prints the report as one table.
func (r Report) WriteTable(w io.Writer) error {
	pr := &textout.Printer{}
	pr.Printf(w, "kubectl-lanaccess bench, %s, %s", r.Date, r.Machine)
	if r.LoadStart > 0 || r.LoadEnd > 0 {
		pr.Printf(w, ", load average %.1f at the start, %.1f at the end", r.LoadStart, r.LoadEnd)
	}
	pr.Println(w)
	pr.Printf(w, "each figure: median [min-max] of %d runs unless marked; doctor = `doctor --no-helpers` (probe timeout %s) from the lab's LAN workstation\n\n", r.Runs, r.ProbeTimeout)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	pr.Println(tw, "SCENARIO\tDOCTOR\tDOCTOR CPU\tMANUAL SCRIPT\tDOCTOR/SCRIPT\tLAB CPU (DURING DOCTOR)")
	pair := func(name string, p TimedPair) {
		if len(p.Doctor) == 0 {
			return
		}
		manual := p.Manual.Seconds()
		if len(p.Manual) > 0 && len(p.Manual) != r.Runs {
			manual += fmt.Sprintf(" (%d runs)", len(p.Manual))
		}
		pr.Printf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, p.Doctor.Seconds(), p.DoctorCPU.Seconds(), manual, Ratio(p.Doctor, p.Manual), p.LabCPU.Seconds())
	}
	pair(fmt.Sprintf("healthy, %d addresses", r.Healthy.Addresses), r.Healthy)
	pair(fmt.Sprintf("1 of %d addresses dead (%s link down)", r.Dead.Addresses, r.DeadNode), r.Dead)
	pair(fmt.Sprintf("healthy, %d addresses", r.Many.Addresses), r.Many)
	if len(r.Many.Doctor) > 0 && len(r.Healthy.Doctor) > 0 {
		pr.Printf(tw, "%d vs %d addresses\t%s\t%s\t%s\t\t%s\n", r.Many.Addresses, r.Healthy.Addresses,
			Ratio(r.Many.Doctor, r.Healthy.Doctor), Ratio(r.Many.DoctorCPU, r.Healthy.DoctorCPU), Ratio(r.Many.Manual, r.Healthy.Manual), Ratio(r.Many.LabCPU, r.Healthy.LabCPU))
	}
	pr.Println(tw, "\t\t\t\t")
	pr.Println(tw, "CLUSTER SIZE\tDOCTOR\tDOCTOR CPU\tPEAK MEMORY\tAPI REQUESTS (BY VERB)")
	row := func(name string, s ScaleRow) {
		if len(s.Doctor) == 0 {
			return
		}
		var totals Series
		for _, a := range s.API {
			totals = append(totals, float64(a.Total))
		}
		pr.Printf(tw, "%s\t%s\t%s\t%s\t%s (%s)\n", fmt.Sprintf("%d Services, %d pods", s.Services, s.Pods), s.Doctor.Seconds(), s.DoctorCPU.Seconds(), s.DoctorRSS.MB(), totals.Count(), s.API[0].Verbs())
		_ = name
	}
	row("small", r.Small)
	row("loaded", r.Loaded)
	pr.Println(tw, "\t\t\t\t")
	pr.Println(tw, "START-UP\tWALL\t\tPEAK MEMORY\tBINARY")
	if len(r.Startup.Version) > 0 {
		pr.Printf(tw, "kubectl-lanaccess version\t%s\t\t%s\t%.1f MB\n", r.Startup.Version.Seconds(), r.Startup.VersionRSS.MB(), r.Startup.BinaryMB)
		pr.Printf(tw, "/bin/true (this machine's floor)\t%s\t\t\n", r.Startup.Floor.Seconds())
	}
	r.writeCommands(pr, tw)
	r.writeMonitor(pr, tw)
	pr.Flush(tw)
	pr.Println(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	pr.Println(tw, "TARGET\tTHIS RUN\tMET")
	for _, t := range r.Targets() {
		met := "no"
		if t.Met {
			met = "yes"
		}
		pr.Printf(tw, "%s\t%s\t%s\n", t.Goal, t.Actual, met)
	}
	pr.Flush(tw)
	r.writeRequestLog(pr, w)
	if len(r.Skipped) > 0 {
		pr.Printf(w, "\nnot run: %s\n", strings.Join(r.Skipped, "; "))
	}
	return pr.Err
}

// writeRequestLog lists the API requests of one run by verb and resource, as the apiserver's
// audit log recorded them: where the requests of the counts above went.
func (r Report) writeRequestLog(pr *textout.Printer, w io.Writer) {
	var lines []string
	if len(r.Small.API) > 0 {
		lines = append(lines, "doctor, healthy: "+formatCounts(r.Small.API[0].ByResource))
	}
	for _, c := range r.Commands {
		if len(c.API) > 0 {
			lines = append(lines, c.Name+": "+formatCounts(c.API[0].ByResource))
		}
	}
	if len(lines) == 0 {
		return
	}
	pr.Println(w, "\nAPI REQUESTS OF ONE RUN BY VERB AND RESOURCE")
	for _, l := range lines {
		pr.Println(w, "  "+l)
	}
}

// writeCommands adds vpn-trace's and the full doctor's rows.
func (r Report) writeCommands(pr *textout.Printer, tw io.Writer) {
	if len(r.Commands) == 0 {
		return
	}
	pr.Println(tw, "\t\t\t\t")
	pr.Println(tw, "COMMAND (lab as it comes up)\tWALL\tCPU\tPEAK MEMORY\tAPI REQUESTS (BY VERB)")
	for _, c := range r.Commands {
		if len(c.Wall) == 0 {
			continue
		}
		api := "not audited (admin)"
		if len(c.API) > 0 {
			var totals Series
			for _, a := range c.API {
				totals = append(totals, float64(a.Total))
			}
			api = fmt.Sprintf("%s (%s)", totals.Count(), c.API[0].Verbs())
		}
		pr.Printf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Name, c.Wall.Seconds(), c.CPU.Seconds(), c.RSS.MB(), api)
		if c.Slowest != "" {
			pr.Printf(tw, "  slowest checks: %s\t\t\t\t\n", c.Slowest)
		}
	}
}

// writeMonitor adds the monitor's rows: one run's cost and memory after many runs, and the
// scrape time with many addresses.
func (r Report) writeMonitor(pr *textout.Printer, tw io.Writer) {
	m, sc := r.Monitor, r.Scrape
	if m.Late == 0 && len(sc.Scrape) == 0 {
		return
	}
	pr.Println(tw, "\t\t\t\t")
	pr.Println(tw, "MONITOR (from the laptop, no cluster access)\tCPU PER RUN\tWALL PER RUN\tRESIDENT (GO HEAP)\t")
	if m.Late > 0 {
		pr.Printf(tw, "%d addresses, --interval %s: after %d runs\t\t\t%.1f MB (%.1f MB)\t\n", 3, m.Interval, m.Early, m.EarlyRSSMB, m.EarlyHeapMB)
		pr.Printf(tw, "  after %d runs (%s)\t%s\t%s\t%.1f MB (%.1f MB)\t\n", m.Late, m.Wall.Round(time.Second), fmtDur(m.CPUPerRun), fmtDur(m.RunWall), m.LateRSSMB, m.LateHeapMB)
	}
	if len(sc.Scrape) > 0 {
		pr.Printf(tw, "GET /metrics, %d addresses (%d scrapes)\t\t%s\t%d sample lines, %.0f kB\t\n", sc.Addresses, len(sc.Scrape), sc.Scrape.Seconds(), sc.Series, float64(sc.Bytes)/1024)
	}
}
