package troupe_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/troupehq/troupe"
)

// contextComparer compares contexts through their accessors, parents included.
var contextComparer = cmp.Comparer(equalContexts)

func equalContexts(a, b troupe.Context) bool {
	if a.TraceID() != b.TraceID() || a.Profile() != b.Profile() {
		return false
	}
	if !cmp.Equal(a.MetadataMap(), b.MetadataMap()) {
		return false
	}
	pa, pb := a.Parent(), b.Parent()
	if pa == nil || pb == nil {
		return pa == nil && pb == nil
	}
	return equalContexts(*pa, *pb)
}

func TestNewContext(t *testing.T) {
	tests := []struct {
		name, trace, profile string
		wantProfile          string
	}{
		{"default profile", "abc123", "", troupe.DefaultProfile},
		{"named profile", "xyz", "research", "research"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := troupe.NewContext(tt.trace, tt.profile)
			if c.TraceID() != tt.trace || c.Profile() != tt.wantProfile {
				t.Errorf("NewContext(%q, %q) = trace %q, profile %q", tt.trace, tt.profile, c.TraceID(), c.Profile())
			}
			if c.Parent() != nil || c.IsZero() {
				t.Errorf("Parent() = %v, IsZero() = %v; want nil, false", c.Parent(), c.IsZero())
			}
			if len(c.MetadataMap()) != 0 {
				t.Errorf("MetadataMap() = %v, want empty", c.MetadataMap())
			}
		})
	}
	if troupe.DefaultProfile != "default" {
		t.Errorf("DefaultProfile = %q, seed 001 says \"default\"", troupe.DefaultProfile)
	}
}

func TestContextValidate(t *testing.T) {
	tests := []struct {
		name    string
		c       troupe.Context
		wantErr bool
	}{
		{"zero value", troupe.Context{}, true},
		{"no trace id", troupe.NewContext("", "demo"), true},
		{"trace id", troupe.NewContext("t", ""), false},
		{"child", troupe.NewContext("t", "").Child(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate()
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Validate() = %v", err)
				}
				return
			}
			var ve *troupe.ValidationError
			if !errors.As(err, &ve) || ve.Field != "trace_id" || ve.Object != "context" {
				t.Errorf("Validate() = %#v, want a context trace_id ValidationError", err)
			}
		})
	}
	if !(troupe.Context{}).IsZero() {
		t.Error("zero Context: IsZero() = false")
	}
}

func TestContextWithMetadata(t *testing.T) {
	base := troupe.NewContext("trace-1", "demo")
	c1 := base.WithMetadata("user", "ana")
	c2 := c1.WithMetadata("step", 2)
	c3 := c2.WithMetadata("user", "bo")

	tests := []struct {
		name string
		c    troupe.Context
		want map[string]any
	}{
		{"base is untouched", base, nil},
		{"one key", c1, map[string]any{"user": "ana"}},
		{"two keys", c2, map[string]any{"user": "ana", "step": 2}},
		{"overwrite in a copy", c3, map[string]any{"user": "bo", "step": 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.c.MetadataMap()); diff != "" {
				t.Errorf("metadata (-want +got):\n%s", diff)
			}
			if tt.c.TraceID() != "trace-1" || tt.c.Profile() != "demo" {
				t.Errorf("trace %q, profile %q changed", tt.c.TraceID(), tt.c.Profile())
			}
			for k, v := range tt.want {
				if got, ok := tt.c.Metadata(k); !ok || got != v {
					t.Errorf("Metadata(%q) = %v, %v; want %v, true", k, got, ok, v)
				}
			}
			if _, ok := tt.c.Metadata("absent"); ok {
				t.Error(`Metadata("absent") found`)
			}
		})
	}

	t.Run("MetadataMap is a copy", func(t *testing.T) {
		m := c2.MetadataMap()
		m["user"] = "mallory"
		m["new"] = true
		if v, _ := c2.Metadata("user"); v != "ana" {
			t.Errorf("Metadata(user) = %v after modifying MetadataMap's result", v)
		}
		if _, ok := c2.Metadata("new"); ok {
			t.Error("a key added to MetadataMap's result leaked into the context")
		}
	})

	t.Run("concurrent copies", func(t *testing.T) {
		shared := base.WithMetadata("shared", 0)
		const n = 64
		out := make([]troupe.Context, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				key := fmt.Sprintf("k%d", i)
				c := shared.WithMetadata(key, i)
				if _, ok := shared.Metadata(key); ok {
					t.Errorf("goroutine %d: shared context saw %q", i, key)
				}
				_ = shared.MetadataMap()
				out[i] = c.WithMetadata("shared", i)
			})
		}
		wg.Wait()
		if diff := cmp.Diff(map[string]any{"shared": 0}, shared.MetadataMap()); diff != "" {
			t.Errorf("shared context changed (-want +got):\n%s", diff)
		}
		for i, c := range out {
			want := map[string]any{"shared": i, fmt.Sprintf("k%d", i): i}
			if diff := cmp.Diff(want, c.MetadataMap()); diff != "" {
				t.Errorf("copy %d (-want +got):\n%s", i, diff)
			}
		}
	})
}

func TestContextChild(t *testing.T) {
	root := troupe.NewContext("trace-9", "research").WithMetadata("tenant", "acme")
	child := root.Child()
	grandchild := child.WithMetadata("depth", 2).Child()

	tests := []struct {
		name       string
		c          troupe.Context
		wantParent *troupe.Context
	}{
		{"child", child, &root},
		{"grandchild", grandchild, func() *troupe.Context { c := child.WithMetadata("depth", 2); return &c }()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.c.TraceID() != "trace-9" || tt.c.Profile() != "research" {
				t.Errorf("trace %q, profile %q; the child must keep both", tt.c.TraceID(), tt.c.Profile())
			}
			if diff := cmp.Diff(tt.wantParent, tt.c.Parent(), contextComparer); diff != "" {
				t.Errorf("Parent() (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("parent cannot be changed through Parent", func(t *testing.T) {
		c := root.Child()
		shared := c // a copy shares c's parent
		*c.Parent() = troupe.NewContext("other-trace", "other")
		for _, x := range []troupe.Context{c, shared} {
			if diff := cmp.Diff(&root, x.Parent(), contextComparer); diff != "" {
				t.Errorf("parent after writing through Parent() (-want +got):\n%s", diff)
			}
		}
	})
	t.Run("parent is a snapshot", func(t *testing.T) {
		c := root.Child()
		_ = root.WithMetadata("later", true)
		if _, ok := c.Parent().Metadata("later"); ok {
			t.Error("metadata added to root afterwards shows in the child's parent")
		}
	})
}

func TestContextJSON(t *testing.T) {
	root := troupe.NewContext("trace-1", "demo").WithMetadata("tenant", "acme").WithMetadata("n", 3.0)
	tests := []struct {
		name string
		c    troupe.Context
		want string
	}{
		{"plain", troupe.NewContext("t", ""), `{"trace_id":"t","profile":"default"}`},
		{"metadata", root, `{"trace_id":"trace-1","profile":"demo","metadata":{"n":3,"tenant":"acme"}}`},
		{"parent", root.Child().WithMetadata("step", "plan"),
			`{"trace_id":"trace-1","profile":"demo","metadata":{"step":"plan"},"parent":{"trace_id":"trace-1","profile":"demo","metadata":{"n":3,"tenant":"acme"}}}`},
		{"grandparent", root.Child().Child(),
			`{"trace_id":"trace-1","profile":"demo","parent":{"trace_id":"trace-1","profile":"demo","parent":{"trace_id":"trace-1","profile":"demo","metadata":{"n":3,"tenant":"acme"}}}}`},
		{"zero", troupe.Context{}, `{"trace_id":"","profile":""}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.c)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("Marshal = %s\nwant      %s", b, tt.want)
			}
			var got troupe.Context
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.c, got, contextComparer); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
			if got.IsZero() != tt.c.IsZero() {
				t.Errorf("IsZero() = %v after round trip, want %v", got.IsZero(), tt.c.IsZero())
			}
			// Through a pointer too, as Event.Context holds one.
			var p *troupe.Context
			if err := json.Unmarshal(b, &p); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&tt.c, p, contextComparer); diff != "" {
				t.Errorf("round trip through *Context (-want +got):\n%s", diff)
			}
		})
	}

	// Seed 001: profile defaults to "default". A context decoded from a client's JSON that
	// names only a trace id must be the one NewContext would have built.
	t.Run("absent profile takes the default", func(t *testing.T) {
		var got troupe.Context
		if err := json.Unmarshal([]byte(`{"trace_id":"abc123"}`), &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(troupe.NewContext("abc123", ""), got, contextComparer); diff != "" {
			t.Errorf("decoded context (-want +got):\n%s", diff)
		}
	})

	t.Run("malformed", func(t *testing.T) {
		for _, in := range []string{`[]`, `{"trace_id":1}`, `{"parent":"x"}`} {
			var c troupe.Context
			if err := json.Unmarshal([]byte(in), &c); err == nil {
				t.Errorf("Unmarshal(%s) succeeded", in)
			}
		}
	})
}
