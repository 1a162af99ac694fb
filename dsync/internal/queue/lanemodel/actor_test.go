package lanemodel

// pc is where an actor's program is.
type pc uint8

const (
	rStart     pc = iota // a reader between read holds: RLock next
	rRootSent            // its root claim and first slot are on their way
	rWalk                // walking down below its root, one claim at a time
	rWaitMark            // waiting for the end of a writer's claim below its root
	rHold                // holding a read hold: RUnlock next
	rSlotSent            // its next slot is on its way
	wStart               // a writer: Lock next
	wClaimSent           // its claim is on its way
	wWalk                // walking down below its claim
	wWaitMark            // waiting for the end of another writer's claim below
	wScan                // reading a lane's slots up to the first missing
	wSealSent            // its seal of a lane is on its way
	wSealsSent           // its seals of several slots ahead are on their way
	wWaitSlot            // waiting for the end of a sealed lane's last read hold
	wHold                // holding: Unlock next
	finished
)

// An actor is one process's program with one RWMutex key: a reader that
// takes left read holds in turn (it keeps one lane), or a writer that
// takes one write hold.
type actor struct {
	writer   bool
	pc       pc
	left     int // read holds still to take
	try      int // the next epoch of the main sequence to claim
	root     int // a reader's lane's root epoch (0: no lane)
	slot     int // a reader's last slot in its lane
	k        int // the claim below being walked
	j        int // a writer's slot being scanned in lane k
	own      int // a writer's claim's epoch
	awaiting bool
	holding  bool
	crashed  bool // its process died: its session expires, and others may mark its claims dead
	tryLock  bool // a writer's TryLock: it fails where a Lock would wait
	refused  bool // a writer's last seal was refused
}

func newReader(holds int) actor { return actor{pc: rStart, left: holds, try: 1} }
func newWriter() actor          { return actor{writer: true, pc: wStart, try: 1} }
