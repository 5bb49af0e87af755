package symm

import (
	"fmt"

	"github.com/seed12530e24/hiercoll/bootstrap"
)

// team is an ordered set of global ranks with this rank's position in it.
type team struct {
	Name  string
	Ranks []int
	Me    int // index of this rank in Ranks
}

// Size is the number of ranks in the team.
func (t team) Size() int { return len(t.Ranks) }

func (t team) String() string {
	return fmt.Sprintf("%s team %v (me: %d)", t.Name, t.Ranks, t.Ranks[t.Me])
}

// Place is where a rank sits in an nnodes × local-world-size job, and the
// teams it belongs to.
type Place struct {
	Shape     bootstrap.Shape
	Rank      int
	Node      int // node id: Rank / LocalSize
	LocalRank int
}

// PlaceOf validates comm's numbering and returns the rank's place.
func PlaceOf(comm bootstrap.Comm) (Place, error) {
	shape, err := bootstrap.ShapeOf(comm)
	if err != nil {
		return Place{}, err
	}
	r := comm.Rank()
	return Place{Shape: shape, Rank: r, Node: r / shape.LocalSize, LocalRank: r % shape.LocalSize}, nil
}

// NodePeer is the global rank of local rank lr on this rank's node.
func (p Place) NodePeer(lr int) int { return p.Node*p.Shape.LocalSize + lr }

// RailPeer is the global rank with this rank's local rank on node n.
func (p Place) RailPeer(n int) int { return n*p.Shape.LocalSize + p.LocalRank }

// World is every rank.
func (p Place) World() team {
	ranks := make([]int, p.Shape.World())
	for i := range ranks {
		ranks[i] = i
	}
	return team{Name: "world", Ranks: ranks, Me: p.Rank}
}

// NodeTeam is the ranks of this rank's node, indexed by local rank.
func (p Place) NodeTeam() team {
	ranks := make([]int, p.Shape.LocalSize)
	for lr := range ranks {
		ranks[lr] = p.NodePeer(lr)
	}
	return team{Name: "node", Ranks: ranks, Me: p.LocalRank}
}

// RailTeam is the ranks with this rank's local rank, indexed by node.
func (p Place) RailTeam() team {
	ranks := make([]int, p.Shape.Nodes)
	for n := range ranks {
		ranks[n] = p.RailPeer(n)
	}
	return team{Name: "rail", Ranks: ranks, Me: p.Node}
}
