package podsim

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
)

// errPoolExhausted means every address in the configured range is in use.
var errPoolExhausted = errors.New("podsim: loopback address pool exhausted")

// ipPool hands out loopback addresses round-robin. Freed addresses are reused
// only after the cursor wraps, like Kubernetes IPAM, so a client still holding
// a dead pod's address does not silently reach the pod that replaced it.
type ipPool struct {
	mu          sync.Mutex
	first, last netip.Addr
	next        netip.Addr
	used        map[netip.Addr]struct{}
}

var loopback = netip.MustParsePrefix("127.0.0.0/8")

func newIPPool(first, last netip.Addr) (*ipPool, error) {
	if !first.Is4() || !loopback.Contains(first) {
		return nil, fmt.Errorf("podsim: first pool address %v is not in %v", first, loopback)
	}
	if !last.Is4() || !loopback.Contains(last) {
		return nil, fmt.Errorf("podsim: last pool address %v is not in %v", last, loopback)
	}
	if last.Less(first) {
		return nil, fmt.Errorf("podsim: pool range %v-%v is reversed", first, last)
	}
	return &ipPool{first: first, last: last, next: first, used: map[netip.Addr]struct{}{}}, nil
}

// usable skips network/broadcast-looking host octets: legal on lo, but they
// read like mistakes in logs and some tools refuse them.
func usable(a netip.Addr) bool {
	b := a.As4()
	return b[3] != 0 && b[3] != 255 && a != netip.AddrFrom4([4]byte{127, 0, 0, 1})
}

func (p *ipPool) allocate() (netip.Addr, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	start := p.next
	for a := start; ; {
		cand := a
		a = a.Next()
		if !a.IsValid() || p.last.Less(a) {
			a = p.first
		}
		if _, taken := p.used[cand]; !taken && usable(cand) {
			p.used[cand] = struct{}{}
			p.next = a
			return cand, nil
		}
		if a == start {
			return netip.Addr{}, errPoolExhausted
		}
	}
}

func (p *ipPool) release(a netip.Addr) {
	p.mu.Lock()
	delete(p.used, a)
	p.mu.Unlock()
}

func (p *ipPool) inUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.used)
}
