package corefile

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/coredns/caddy/caddyfile"
)

// setupPlugins checks every plugin's arguments as its setup function does when CoreDNS
// starts: caddy runs each directive, in plugin.cfg order, for every server block that has it
// (caddy.go executeDirectives), and the first error stops CoreDNS. The model records each error
// (the first is the one the pod logs) and keeps what the query model needs from each plugin.
func (c *Corefile) setupPlugins() {
	unchecked := map[string]bool{}
	for _, dir := range Directives {
		for i := range c.Blocks {
			b := &c.Blocks[i]
			if !b.raw.has(dir) {
				continue
			}
			check, ok := pluginSetups[dir]
			if !ok {
				unchecked[dir] = true
				continue
			}
			d := caddyfile.NewDispenserTokens("", b.raw.tokens(dir))
			if err := check(c, b, &d); err != nil {
				c.setupProblem(b, dir, err)
			}
		}
	}
	for _, dir := range Directives {
		if unchecked[dir] {
			c.Unchecked = append(c.Unchecked, dir)
		}
	}
}

// dispenserErr reads caddy's positional errors: "FILE:LINE - Error during parsing: MSG" and
// "FILE:LINE - Syntax error: MSG" (FILE is empty for the Corefile's own tokens here).
var dispenserErr = regexp.MustCompile(`(?s)^(.*?):(\d+) - (.*)$`)

// setupProblem records err as CoreDNS prints it: plugin.Error prefixes "plugin/NAME: ", and a
// positional error names the file (the -conf path for the Corefile's own lines) and the line.
func (c *Corefile) setupProblem(b *ServerBlock, dir string, err error) {
	first := b.PluginsNamed(dir)[0]
	file, line, msg := first.File, first.Line, err.Error()
	if m := dispenserErr.FindStringSubmatch(msg); m != nil {
		file = m[1]
		line, _ = strconv.Atoi(m[2])
		shown := file
		if shown == "" {
			shown = c.Conf
		}
		msg = fmt.Sprintf("%s:%d - %s", shown, line, m[3])
	}
	c.problem(file, line, "plugin/"+dir+": "+msg)
}

// errOnce is plugin.ErrOnce.
var errOnce = errors.New("this plugin can only be used once per Server Block")

// pluginSetups are the setup checks this model knows, each after the plugin's setup.go in
// CoreDNS v1.14.7. A plugin without one is listed in Corefile.Unchecked.
var pluginSetups = map[string]func(c *Corefile, b *ServerBlock, d *caddyfile.Dispenser) error{
	"template":    setupTemplate,
	"reload":      setupReload,
	"forward":     setupForward,
	"cache":       setupCache,
	"errors":      setupErrors,
	"health":      setupHealth,
	"ready":       setupReady,
	"prometheus":  setupPrometheus,
	"loop":        setupLoop,
	"hosts":       setupHosts,
	"bind":        setupBind,
	"loadbalance": setupLoadbalance,
	"kubernetes":  setupZonePlugin("kubernetes", true),
	"file":        setupFile,
}

// setupTemplate: plugin/template/setup.go templateParse. Answers are built at query time, so
// an answer that is not a valid record starts fine and SERVFAILs every query it matches.
func setupTemplate(c *Corefile, b *ServerBlock, d *caddyfile.Dispenser) error {
	ts, err := parseTemplates(d, b.Zones(), c.warn)
	for i := range ts {
		for _, list := range []*[]Answer{&ts[i].Answers, &ts[i].Additional, &ts[i].Authority} {
			zone := ""
			if len(ts[i].Zones) > 0 {
				zone = ts[i].Zones[0]
			}
			for j := range *list {
				(*list)[j].describe(zone, ts[i].Class, ts[i].Type)
			}
		}
	}
	for i, p := range b.PluginsNamed("template") {
		if i < len(ts) {
			ts[i].EndLine = p.EndLine
		}
	}
	b.Templates = ts
	return err
}

// setupReload: plugin/reload/setup.go. Interval and jitter are Go durations; the interval must
// be at least 2s, the jitter 0 or at least 1s.
func setupReload(_ *Corefile, _ *ServerBlock, d *caddyfile.Dispenser) error {
	d.Next()
	args := d.RemainingArgs()
	if len(args) > 2 {
		return d.ArgErr()
	}
	interval := 30 * time.Second
	if len(args) > 0 {
		v, err := time.ParseDuration(args[0])
		if err != nil {
			return err
		}
		interval = v
	}
	if interval < 2*time.Second {
		return fmt.Errorf("interval value must be greater or equal to %v", 2*time.Second)
	}
	if len(args) > 1 {
		j, err := time.ParseDuration(args[1])
		if err != nil {
			return err
		}
		if j != 0 && j < time.Second {
			return fmt.Errorf("jitter value must be 0 or greater or equal to %v", time.Second)
		}
	}
	return nil
}

// forwardStanza is one `forward FROM TO... { except ... }`.
type forwardStanza struct {
	plugin Plugin
	from   string
	to     []string
	except []string
}

// maxUpstreams is the forward plugin's limit (plugin/forward/setup.go max).
const maxUpstreams = 15

// forwardOptions are the properties plugin/forward/setup.go parseBlock knows; any other is
// "unknown property".
var forwardOptions = map[string]bool{
	"except": true, "max_fails": true, "max_connect_attempts": true, "health_check": true, "force_tcp": true,
	"prefer_udp": true, "tls": true, "tls_servername": true, "expire": true, "max_age": true,
	"max_idle_conns": true, "read_timeout": true, "doh_method": true, "policy": true,
	"max_concurrent": true, "next": true, "next_on_nodata": true,
	"failfast_all_unhealthy_upstreams": true, "failover": true, "resolver": true, "source_address": true,
}

// setupForward: plugin/forward/setup.go parseForward and parseStanza (the FROM zone, at least
// one TO, known properties, at most 15 upstreams). Upstreams that are files are read from the
// pod (/etc/resolv.conf always exists: the kubelet writes it); names are resolved at start-up,
// which the model does not do.
func setupForward(_ *Corefile, b *ServerBlock, d *caddyfile.Dispenser) error {
	entries := b.PluginsNamed("forward")
	for i := 0; d.Next(); i++ {
		f := forwardStanza{}
		if i < len(entries) {
			f.plugin = entries[i]
		}
		if !d.NextArg() {
			return d.ArgErr()
		}
		zones := normalizeExact(d.Val())
		if len(zones) == 0 {
			return fmt.Errorf("unable to normalize '%s'", d.Val())
		}
		f.from = zones[0]
		f.to = d.RemainingArgs()
		if len(f.to) == 0 {
			return d.ArgErr()
		}
		for d.NextBlock() {
			opt := d.Val()
			if !forwardOptions[opt] {
				return d.Errf("unknown property '%s'", opt)
			}
			args := d.RemainingArgs()
			if opt == "except" {
				if len(args) == 0 {
					return d.ArgErr()
				}
				for _, a := range args {
					f.except = append(f.except, normalizeExact(a)...)
				}
			}
		}
		if len(f.to) > maxUpstreams {
			return fmt.Errorf("more than %d TOs configured: %d", maxUpstreams, len(f.to))
		}
		b.forwards = append(b.forwards, f)
	}
	return nil
}

// setupCache: plugin/cache/setup.go cacheParse: once per block; a first argument that is a
// number is the TTL cap, which must be positive; the rest are zones.
func setupCache(_ *Corefile, b *ServerBlock, d *caddyfile.Dispenser) error {
	for i := 0; d.Next(); i++ {
		if i > 0 {
			return errOnce
		}
		args := d.RemainingArgs()
		b.cacheCap = 3600
		if len(args) > 0 {
			if ttl, err := strconv.Atoi(args[0]); err == nil {
				if ttl <= 0 {
					return fmt.Errorf("cache TTL can not be zero or negative: %d", ttl)
				}
				b.cacheCap = uint32(min(ttl, 1<<31)) // #nosec G115 -- positive, bounded
				args = args[1:]
			}
		}
		b.cacheZones = originsFromArgsOrBlock(args, b.Zones(), nil)
		for d.NextBlock() {
			d.RemainingArgs() // success, denial, prefetch, serve_stale...: not checked
		}
	}
	return nil
}

// setupErrors: plugin/errors/setup.go errorsParse: once per block, no argument but "stdout".
func setupErrors(_ *Corefile, _ *ServerBlock, d *caddyfile.Dispenser) error {
	for i := 0; d.Next(); i++ {
		if i > 0 {
			return errOnce
		}
		args := d.RemainingArgs()
		switch {
		case len(args) == 1 && args[0] != "stdout":
			return d.Errf("invalid log file: %s", args[0])
		case len(args) > 1:
			return d.ArgErr()
		}
		for d.NextBlock() {
			switch d.Val() {
			case "stacktrace":
			case "consolidate":
				d.RemainingArgs()
			default:
				return d.SyntaxErr("Unknown field " + d.Val())
			}
		}
	}
	return nil
}

// setupHealth: plugin/health/setup.go parse: one optional HOST:PORT, `lameduck DURATION`.
func setupHealth(_ *Corefile, _ *ServerBlock, d *caddyfile.Dispenser) error {
	for d.Next() {
		if err := hostPortArg(d); err != nil {
			return err
		}
		for d.NextBlock() {
			switch d.Val() {
			case "lameduck":
				args := d.RemainingArgs()
				if len(args) != 1 {
					return d.ArgErr()
				}
				if _, err := time.ParseDuration(args[0]); err != nil {
					return fmt.Errorf("unable to parse lameduck duration value: '%v' : %v", args[0], err)
				}
			default:
				return d.Errf("unknown property '%s'", d.Val())
			}
		}
	}
	return nil
}

// setupReady: plugin/ready/setup.go parse: once per block, one optional HOST:PORT,
// `monitor until-ready|continuously`.
var setupReady = onceListener(func(d *caddyfile.Dispenser) error {
	if d.Val() != "monitor" {
		return d.ArgErr()
	}
	args := d.RemainingArgs()
	if len(args) != 1 {
		return d.ArgErr()
	}
	if args[0] != "until-ready" && args[0] != "continuously" {
		return d.Errf("monitor type '%s' not supported", args[0])
	}
	return nil
})

// setupPrometheus: plugin/metrics/setup.go parse: once per block, one optional HOST:PORT,
// `runtime_metrics`, `tls`.
var setupPrometheus = onceListener(func(d *caddyfile.Dispenser) error {
	if v := d.Val(); v != "runtime_metrics" && v != "tls" {
		return d.Errf("unknown option: %s", v)
	}
	d.RemainingArgs()
	return nil
})

// onceListener is the shape of the ready and prometheus setups: once per block, an optional
// address, then the properties of the block, each read by property.
func onceListener(property func(d *caddyfile.Dispenser) error) func(*Corefile, *ServerBlock, *caddyfile.Dispenser) error {
	return func(_ *Corefile, _ *ServerBlock, d *caddyfile.Dispenser) error {
		for i := 0; d.Next(); i++ {
			if i > 0 {
				return errOnce
			}
			if err := hostPortArg(d); err != nil {
				return err
			}
			for d.NextBlock() {
				if err := property(d); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// hostPortArg reads the optional address of health, ready and prometheus: net.SplitHostPort
// must accept it (":8080" does, "8080" does not).
func hostPortArg(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	switch len(args) {
	case 0:
		return nil
	case 1:
		_, _, err := net.SplitHostPort(args[0])
		return err
	}
	return d.ArgErr()
}

// setupLoop: plugin/loop/setup.go parse: once per block, no argument.
func setupLoop(_ *Corefile, _ *ServerBlock, d *caddyfile.Dispenser) error {
	for i := 0; d.Next(); i++ {
		if i > 0 {
			return errOnce
		}
		if d.NextArg() {
			return d.ArgErr()
		}
	}
	return nil
}

// setupLoadbalance: plugin/loadbalance/setup.go parse (round_robin, or weighted with a file).
func setupLoadbalance(_ *Corefile, _ *ServerBlock, d *caddyfile.Dispenser) error {
	for d.Next() {
		args := d.RemainingArgs()
		if len(args) == 0 {
			continue
		}
		switch args[0] {
		case "round_robin":
			if len(args) > 1 {
				return d.Errf("unknown property for %s", args[0])
			}
		case "weighted":
			if len(args) < 2 {
				return d.Err("missing weight file argument")
			}
			if len(args) > 2 {
				return d.Err("unexpected argument(s)")
			}
			for d.NextBlock() {
				d.RemainingArgs()
			}
		default:
			return fmt.Errorf("unknown policy: %s", args[0])
		}
	}
	return nil
}

// setupBind: plugin/bind/setup.go: addresses or interface names the block listens on.
func setupBind(_ *Corefile, b *ServerBlock, d *caddyfile.Dispenser) error {
	b.Listen = nil
	for d.Next() {
		addrs := d.RemainingArgs()
		if len(addrs) == 0 {
			return errors.New("at least one address or interface name is expected")
		}
		for d.NextBlock() {
			switch d.Val() {
			case "except":
				if len(d.RemainingArgs()) == 0 {
					return errors.New("at least one address or interface must be given to except subdirective")
				}
			default:
				return fmt.Errorf("invalid option %q", d.Val())
			}
		}
		b.Listen = append(b.Listen, addrs...)
	}
	return nil
}

// zonePlugin is a plugin that answers the names of its zones from a source this model does
// not read (the cluster's Services, a zone file).
type zonePlugin struct {
	plugin Plugin
	zones  []string
	// fall are the zones of its fallthrough (nil: none).
	fall []string
	// files are the zone file of a `file` entry read per origin, when the API shows it.
	files map[string]*fileZone
}

// setupZonePlugin reads the zones (arguments, else the block's) and the fallthrough of the
// kubernetes and file plugins, once per block for kubernetes (plugin/kubernetes/setup.go).
func setupZonePlugin(name string, once bool) func(*Corefile, *ServerBlock, *caddyfile.Dispenser) error {
	return func(c *Corefile, b *ServerBlock, d *caddyfile.Dispenser) error {
		entries := b.PluginsNamed(name)
		for i := 0; d.Next(); i++ {
			if i > 0 && once {
				return errOnce
			}
			args := d.RemainingArgs()
			db := ""
			if name == "file" {
				if len(args) == 0 {
					return d.ArgErr()
				}
				db, args = args[0], args[1:]
			}
			zp := zonePlugin{zones: originsFromArgsOrBlock(args, b.Zones(), nil)}
			zp.files = c.readZoneFiles(b, db, zp.zones)
			if i < len(entries) {
				zp.plugin = entries[i]
			}
			for d.NextBlock() {
				if d.Val() == "fallthrough" {
					zp.fall = fallZones(d.RemainingArgs())
					continue
				}
				d.RemainingArgs()
			}
			b.zonePlugins = append(b.zonePlugins, zp)
		}
		return nil
	}
}

// readZoneFiles reads a `file` entry's zone file for each of its origins, when it is a file of
// the pod the API shows (nil otherwise, or for db "": the kubernetes plugin).
func (c *Corefile) readZoneFiles(b *ServerBlock, db string, origins []string) map[string]*fileZone {
	if db == "" || c.files == nil {
		return nil
	}
	p := c.ResolvePath(b, db)
	f, ok := c.files.Read(p)
	if !ok {
		return nil
	}
	out := map[string]*fileZone{}
	for _, origin := range origins {
		out[origin] = readFileZone(c.files, origin, p, f.Content)
	}
	return out
}

// setupFile: plugin/file/setup.go fileParse: a zone file that exists must parse and hold a SOA
// (file.go Parse), or CoreDNS does not start; a missing one is only a warning while `reload`
// is not 0 (it retries every minute by default).
func setupFile(c *Corefile, b *ServerBlock, d *caddyfile.Dispenser) error {
	if err := setupZonePlugin("file", false)(c, b, d); err != nil {
		return err
	}
	for _, fz := range b.FileZones() {
		if fz.Path == "" {
			continue
		}
		p := c.ResolvePath(b, fz.Path)
		f, ok := c.files.Read(p)
		if !ok {
			continue
		}
		for _, origin := range fz.Zones {
			err := parseZoneFile(c.files, origin, p, f.Content)
			if errors.Is(err, ErrZoneUnread) {
				c.Incomplete = append(c.Incomplete, err.Error())
				continue
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// hostsConf is the hosts plugin of a block.
type hostsConf struct {
	plugin  Plugin
	path    string
	origins []string
	fall    []string
	// names are the hosts file's and inline entries, by lower-case FQDN; known is false when
	// the file cannot be read from the API.
	names map[string][]string
	known bool
	// ttl is the answers' TTL (plugin/hosts/setup.go: 3600 unless `ttl` says).
	ttl uint32
	// wild says how `*.NAME` entries are read: "" as wildcards matching one label below NAME
	// (coredns/coredns commit 6805f6f8a0df "plugin/hosts: add wildcard support", first tag
	// v1.14.5: plugin/hosts/hostsfile.go lookupStaticHostLocked, an exact name first, then the
	// name with its first label replaced by *), "literal" for older stock builds (an exact map
	// lookup: no query matches them), else why it cannot be told (a build that is not stock).
	wild string
}

// setupHosts: plugin/hosts/setup.go hostsParse: once per block; FILE (default /etc/hosts),
// zones; ttl 1..65535, reload a duration; any other line is an inline entry until a
// `fallthrough` has been read, after which it is an unknown property.
func setupHosts(c *Corefile, b *ServerBlock, d *caddyfile.Dispenser) error {
	h := &hostsConf{path: "/etc/hosts", names: map[string][]string{}, ttl: 3600}
	if c.files != nil {
		switch bld := c.files.Build; {
		case !bld.Known():
			h.wild = "the image " + bld.Image + " is not a stock CoreDNS of a known version: whether its hosts plugin reads `*.` entries as wildcards (CoreDNS v1.14.5 and later) cannot be told"
		case !bld.AtLeast(1, 14, 5):
			h.wild = "literal"
		}
	}
	if ps := b.PluginsNamed("hosts"); len(ps) > 0 {
		h.plugin = ps[0]
	}
	var inline []string
	for i := 0; d.Next(); i++ {
		if i > 0 {
			return errOnce
		}
		args := d.RemainingArgs()
		if len(args) >= 1 {
			h.path, args = args[0], args[1:]
		}
		h.origins = originsFromArgsOrBlock(args, b.Zones(), nil)
		for d.NextBlock() {
			if err := h.property(d, &inline); err != nil {
				return err
			}
		}
	}
	h.path = c.ResolvePath(b, h.path)
	if f, ok := c.files.Read(h.path); ok {
		h.known = true
		parseHosts(f.Content, h.names)
	} else if c.files != nil && c.files.Known(h.path) {
		h.known = true // hostsParse only warns: "File does not exist"
		c.warn(h.plugin.File, h.plugin.Line, "plugin/hosts: File does not exist: "+h.path)
	}
	parseHosts(strings.Join(inline, "\n"), h.names)
	b.hosts = h
	return nil
}

// property reads one line of the hosts block, as hostsParse does.
func (h *hostsConf) property(d *caddyfile.Dispenser, inline *[]string) error {
	switch d.Val() {
	case "fallthrough":
		h.fall = fallZones(d.RemainingArgs())
	case "fallthrough_unsupported", "no_reverse":
		d.RemainingArgs()
	case "ttl":
		rest := d.RemainingArgs()
		if len(rest) < 1 {
			return d.Errf("ttl needs a time in second")
		}
		ttl, err := strconv.Atoi(rest[0])
		if err != nil {
			return d.Errf("ttl needs a number of second")
		}
		if ttl <= 0 || ttl > 65535 {
			return d.Errf("ttl provided is invalid")
		}
		h.ttl = uint32(ttl)
	case "reload":
		rest := d.RemainingArgs()
		if len(rest) != 1 {
			return d.Errf("reload needs a duration (zero seconds to disable)")
		}
		v, err := time.ParseDuration(rest[0])
		if err != nil {
			return d.Errf("invalid duration for reload '%s'", rest[0])
		}
		if v < 0 {
			return d.Errf("invalid negative duration for reload '%s'", rest[0])
		}
	default:
		if len(h.fall) > 0 {
			return d.Errf("unknown property '%s'", d.Val())
		}
		*inline = append(*inline, strings.Join(append([]string{d.Val()}, d.RemainingArgs()...), " "))
	}
	return nil
}

// parseHosts reads hosts-file lines ("ADDRESS NAME..."; # starts a comment) into names, as
// plugin/hosts/hostsfile.go parse does.
func parseHosts(text string, names map[string][]string) {
	for line := range strings.SplitSeq(text, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		addr := f[0]
		if i := strings.IndexByte(addr, '%'); i >= 0 {
			addr = addr[:i]
		}
		ip := net.ParseIP(addr)
		if ip == nil {
			continue
		}
		for _, n := range f[1:] {
			key := canonicalZone(n)
			names[key] = append(names[key], ip.String())
		}
	}
}
