// Package lanemodel is a model, explored exhaustively by its tests, of read
// lanes: the change to the queue protocol (package queue) proposed so that
// readers of an RWMutex stop paying for each other (issue 76;
// bench/rwmutex-commands.md has the figures it answers). No code of the
// library uses it, and the engine does not implement it yet: the model
// settles the protocol's rules first, and each rule below has a test that
// breaks it and a violation the explorer then finds (TestLaneRulesEachMatter).
//
// # The cost it removes
//
// Today every RLock is a claim of its own at the key's next epoch, and F1
// (package queue) lets a process insert epoch E+1 only once it saw E: n
// processes reading one key in a loop all aim at the same next epoch, lose
// about (n−1)/2 inserts a cycle, climb, and walk each other's claims (5.4,
// 19 and 51 commands per RLock+RUnlock at 4, 16 and 64 readers, against 2
// for one). A reader must stop competing for one ID per RLock.
//
// # Lanes
//
// A process's read hold, once it held, keeps a lane: a sequence of slots of
// its own, under its shared claim of the main sequence (the lane's root).
//
//   - RLock without a lane claims a root at the key's next epoch, as a
//     shared claim does today, with the lane's first slot and its shadow
//     in the same ordered insert (key@E, then key@E/n/1, where n is the
//     root's nonce, so that a lane's IDs never meet another history's),
//     and holds its first read hold by the walk of a shared claim: once
//     every lower exclusive claim has ended, and its root does not lie
//     below the floor of the gate that covers it (a prune may have deleted
//     a seal in slot 1 before the slot's insert landed: package queue's
//     holes, checked as for any claim).
//   - RLock with a lane inserts its next slot, i+1, once it has ended the
//     read hold of slot i itself (RUnlock), chained as tip.go chains a
//     claim on this process's own release (the slot with its shadow, then
//     slot i's shadow again, whose duplicate proves the lane still stored).
//     Its insert landing is its hold: no read. RUnlock inserts slot i's end
//     marker. Two commands a cycle, however many processes read the key.
//   - A slot's insert whose reply never comes (its outcome unknown: the
//     insert may land, whole or in part, at any time after) is no hold:
//     the reader ends the slot and its root, as after a lost chain, and
//     claims a new root. Its end markers may land before the slot does; a
//     writer then finds the slot ended, or seals above it. A reader that
//     took such a slot for a hold would hold beside a writer that sealed
//     it.
//   - A process holding several read locks at once has a lane for each.
//
// # Writers seal
//
// A writer claims its epoch W as today and walks down. At a live root E
// (no end marker) it reads E's lane up to the first missing slot j and
// inserts its seal there: a document in slot j naming W. A seal is an
// insert of the only ID the lane's next read hold could take, so:
//
//   - the seal landed: no read hold lies at j or above (a slot is inserted
//     only after the one below existed and was ended by its own process),
//     and only slot j−1's may still be held: the writer waits for its end
//     marker (or proves its session expired and marks it dead), then
//     passes the lane as ended. Holds below j−1 ended before j−1 was
//     inserted: their markers may land later, and need not be read.
//   - the seal was refused: it reads what took slot j. A read hold: it
//     seals j+1 (and slots above it: see the writer's starvation below),
//     and reads on from j+1 as before. A seal (an earlier writer's, which ended or gave up): the
//     lane ends at j, and it waits for slot j−1 as above. Sealing j+1 after
//     another writer's seal would leave the lane's last read hold unread and
//     the writer waiting for an end marker no slot ever gets.
//   - a seal whose reply never comes (it may land at any time after) is
//     read back as a refused one is: a seal in the slot, its own or
//     another's, ends the lane there; a read hold, the scan goes on;
//     nothing yet, it seals again (the first, landing after, is refused).
//     A writer that took it for landed would miss a read hold that took
//     the slot.
//   - a reader whose slot is refused reads it (a seal), ends its root, and
//     claims a new root above the writer the seal names: it queues behind
//     the writer. One that claimed a root below W had its first slot
//     sealed before it held (the ordered insert is not atomic: the writer
//     may read the root between its two documents), and does the same.
//
// A seal landing late (its writer gave up) only closes a lane early: its
// reader claims anew. A read hold's insert landing late either lands before
// the seal (then the writer waits for it) or is refused.
//
// FIFO between writers and readers: a writer is queued, in the sense of the
// RWMutex doc's "a reader holds once every writer queued before it has
// ended", once its claim landed and the lanes below it are sealed; a read
// hold that lands in a lane before its seal came before the writer. A
// reader's new root lies above every writer whose claim it saw, and waits
// for it as today.
//
// # Tokens
//
// A read hold's token is its root's epoch × 2^20 plus its slot, a writer's
// its epoch × 2^20: read holds keep tokens of their own (the RWMutex doc's
// "no two read holds share one"), and every token stays ordered against
// every writer's: a lane a writer sealed lies below its claim, and a root
// claimed after a writer lies above it. A lane whose slots reach 2^20 − 1
// ends, and its process claims a new root. (Mutex keys keep their epochs.)
//
// # What the model covers
//
// Readers with one lane each and a number of read holds, writers with one
// write hold each (Lock, or TryLock: it seals only a lane whose last read
// hold it found ended, and fails where a Lock would wait; one that fails
// may have sealed lanes it passed before, whose readers then claim new
// roots above it); every interleaving of their steps and of their
// requests' landing (any request may land after its sender's later ones,
// an ordered insert one document at a time); writers giving up wherever
// they wait, their requests landing after; one process crashing anywhere,
// its claims and read holds then marked dead by those waiting for them;
// and the lanes below a writer that held pruned, at any time after, in
// three steps a lane (its slots' shadows, then its seals, then the rest);
// and the store emptied once while no lock is held or awaited (claims
// after it lie above every epoch before, as segments make them), markers
// sent before it landing after; and the replies to a reader's slot
// inserts and to a writer's seals lost. A prune must delete a lane's shadows before its seal, or a reader's
// chained insert could land between the two and hold under a deleted seal;
// a lane's extent, for the prune's deletes by ID, is its seal's slot or the
// slot its root's end marker records.
//
// It checks that no writer holds beside any other hold, that a writer's
// token is above every token held before it and a reader's above every
// writer's before it, that a root stored after a writer's claim holds only
// once that writer ended, and that nobody waits for ever (a state where only
// giving up moves on). go test runs the small configurations (seconds);
// DSYNC_LONG=1, without the race detector, adds the larger ones (up to 7.7
// million states; about ten minutes on two cores):
//
//	DSYNC_LONG=1 go test -v -run TestLanesHoldTheirPromises ./dsync/internal/queue/lanemodel
//
// # What it leaves to the engine and the queue simulation
//
// The pruning of the main sequence's claims, outages and resumed sessions, the sweeper, Queue and
// dsync status (which read lanes to report readers), the wake-ups (a
// slot's end marker must wake a writer as a claim's does), and a writer's
// starvation. A reader looping faster than a writer's round trip can take
// slot after slot ahead of its seals, so a writer whose seal a read hold
// refused seals that hold's next slot and others above it in one unordered
// insert: the lane then ends at its lowest seal, and every slot below it
// that a read hold took is read (the model explores this with one and two
// slots ahead, and TestLaneRulesEachMatter breaks it by waiting only for
// the hold seen before the seals). That it bounds a writer's wait is a
// matter of speeds, which the model does not have: its readers may run any
// number of cycles between two steps of a writer.
package lanemodel
