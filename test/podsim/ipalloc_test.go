package podsim

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
)

func mustAlloc(t *testing.T, p *ipPool) string {
	t.Helper()
	a, err := p.allocate()
	if err != nil {
		t.Fatalf("allocate: %v", err)
	}
	return a.String()
}

func TestIPPoolSequenceSkipsNetworkAndBroadcastOctets(t *testing.T) {
	p, err := newIPPool(netip.MustParseAddr("127.0.0.253"), netip.MustParseAddr("127.0.1.2"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 4 {
		got = append(got, mustAlloc(t, p))
	}
	want := "127.0.0.253 127.0.0.254 127.0.1.1 127.0.1.2"
	if strings.Join(got, " ") != want {
		t.Fatalf("allocations = %v, want %s", got, want)
	}
	if _, err := p.allocate(); !errors.Is(err, errPoolExhausted) {
		t.Fatalf("fifth allocate err = %v, want ErrPoolExhausted", err)
	}
	if p.inUse() != 4 {
		t.Fatalf("inUse = %d, want 4", p.inUse())
	}
}

// The default pool is this process's /16 (see processOctet) and starts at .0.2.
func TestIPPoolDefaultRangeStartsAtDotTwo(t *testing.T) {
	cfg, _, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	p, err := newIPPool(cfg.FirstIP, cfg.LastIP)
	if err != nil {
		t.Fatal(err)
	}
	n := 2 + os.Getpid()%250
	wantA, wantB := fmt.Sprintf("127.%d.0.2", n), fmt.Sprintf("127.%d.0.3", n)
	if a, b := mustAlloc(t, p), mustAlloc(t, p); a != wantA || b != wantB {
		t.Fatalf("first two = %s, %s; want %s, %s", a, b, wantA, wantB)
	}
	if got, want := cfg.LastIP.String(), fmt.Sprintf("127.%d.255.254", n); got != want {
		t.Fatalf("last = %s, want %s", got, want)
	}
}

// Freed addresses come back only after the cursor wraps, never immediately.
func TestIPPoolReusesFreedAddressesAfterWrap(t *testing.T) {
	p, err := newIPPool(netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.4"))
	if err != nil {
		t.Fatal(err)
	}
	a := mustAlloc(t, p) // .2
	_ = mustAlloc(t, p)  // .3
	p.release(netip.MustParseAddr(a))
	if got := mustAlloc(t, p); got != "127.0.0.4" {
		t.Fatalf("after freeing .2 got %s, want the unused .4 first", got)
	}
	if got := mustAlloc(t, p); got != "127.0.0.2" {
		t.Fatalf("after wrap got %s, want freed 127.0.0.2", got)
	}
	if _, err := p.allocate(); !errors.Is(err, errPoolExhausted) {
		t.Fatalf("err = %v, want ErrPoolExhausted", err)
	}
}

func TestIPPoolRejectsBadRanges(t *testing.T) {
	cases := []struct {
		name, first, last, wantErr string
	}{
		{"not loopback", "10.0.0.1", "10.0.0.9", "first pool address 10.0.0.1 is not in 127.0.0.0/8"},
		{"last outside", "127.0.0.2", "128.0.0.1", "last pool address 128.0.0.1 is not in 127.0.0.0/8"},
		{"ipv6", "::1", "::2", "first pool address ::1 is not in 127.0.0.0/8"},
		{"reversed", "127.0.0.9", "127.0.0.2", "pool range 127.0.0.9-127.0.0.2 is reversed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newIPPool(netip.MustParseAddr(tc.first), netip.MustParseAddr(tc.last))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestConfigRejectsBadInput(t *testing.T) {
	cases := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"bad selector", Config{Selector: "a in (b"}, `selector "a in (b"`},
		{"empty binary", Config{Binaries: map[string]string{"img:1": ""}}, `Binaries["img:1"] is empty`},
		{"nil func", Config{InProcess: map[string]InProcessFunc{"runner": nil}}, `InProcess["runner"] is nil`},
		{"pool outside loopback", Config{FirstIP: netip.MustParseAddr("10.0.0.1")}, "first pool address 10.0.0.1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newForClient(tc.cfg, nil, discard)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func BenchmarkIPPoolAllocateRelease(b *testing.B) {
	p, err := newIPPool(netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.255.254"))
	if err != nil {
		b.Fatal(err)
	}
	// Keep 500 addresses in use, the scale of a large envtest run.
	held := make([]netip.Addr, 0, 500)
	for range 500 {
		a, _ := p.allocate()
		held = append(held, a)
	}
	b.ResetTimer()
	for i := range b.N {
		a, err := p.allocate()
		if err != nil {
			b.Fatal(err)
		}
		j := i % len(held)
		p.release(held[j])
		held[j] = a
	}
}
