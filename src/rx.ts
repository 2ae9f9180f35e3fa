// The parts of RxJS the agent uses, loaded by their own paths (the package
// exports `rxjs/internal/*`): its index loads every observable and operator
// it has, 47-50 ms of a start against 18-29 ms for these, and a start is what
// a small cluster notices. The index requires these same files, so a value
// made from either (a test's Subject) is the same class.

export { BehaviorSubject } from 'rxjs/internal/BehaviorSubject';
export { firstValueFrom } from 'rxjs/internal/firstValueFrom';
export { combineLatest } from 'rxjs/internal/observable/combineLatest';
export { defer } from 'rxjs/internal/observable/defer';
export { from } from 'rxjs/internal/observable/from';
export { merge } from 'rxjs/internal/observable/merge';
export { timer } from 'rxjs/internal/observable/timer';
export { Observable } from 'rxjs/internal/Observable';
export { distinctUntilChanged } from 'rxjs/internal/operators/distinctUntilChanged';
export { filter } from 'rxjs/internal/operators/filter';
export { map } from 'rxjs/internal/operators/map';
export { retry } from 'rxjs/internal/operators/retry';
export { ReplaySubject } from 'rxjs/internal/ReplaySubject';
export { asyncScheduler } from 'rxjs/internal/scheduler/async';
export { Subject } from 'rxjs/internal/Subject';
export { Subscription } from 'rxjs/internal/Subscription';
export type { ObservableInput, SchedulerLike, Subscriber } from 'rxjs';
