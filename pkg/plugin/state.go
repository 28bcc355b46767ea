package plugin

import (
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// ResourceStates keeps a plugin's in-memory state per Bundle resource (by the
// Bundle's UID, so that a re-created Bundle starts afresh). The zero value is
// ready; New makes the state of a resource seen for the first time. A plugin that
// keeps one is a Forgetter, whose ForgetBundle calls Forget, and a
// ResourceForgetter, whose ForgetResource calls ForgetResource.
type ResourceStates[T any] struct {
	New func() *T
	// Drop, when set, is given each state as it is forgotten, for what the state
	// stands for outside it (node-removal's gauge series of the resource). It is
	// called with the states' lock held: it must not call back into them.
	Drop func(*T)

	mu     sync.Mutex
	states map[string]*T
}

// Of returns the state of the request's resource, made on first use.
func (s *ResourceStates[T]) Of(req Request) *T {
	key := string(req.Bundle.UID) + "/" + req.Resource
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.states == nil {
		s.states = map[string]*T{}
	}
	st, ok := s.states[key]
	if !ok {
		st = s.New()
		s.states[key] = st
	}
	return st
}

// Forget drops the states of the resources of the Bundle whose UID is uid.
func (s *ResourceStates[T]) Forget(uid types.UID) {
	prefix := string(uid) + "/"
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, st := range s.states {
		if strings.HasPrefix(key, prefix) {
			s.drop(key, st)
		}
	}
}

// ForgetResource drops the state of the resource named resource of the Bundle
// whose UID is uid.
func (s *ResourceStates[T]) ForgetResource(uid types.UID, resource string) {
	key := string(uid) + "/" + resource
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.states[key]; ok {
		s.drop(key, st)
	}
}

// drop forgets the state under key; s.mu is held.
func (s *ResourceStates[T]) drop(key string, st *T) {
	delete(s.states, key)
	if s.Drop != nil {
		s.Drop(st)
	}
}
