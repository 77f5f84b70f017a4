/**
 * contract.md#d20: every change of a member's `authentication_status`, in one table: the states each action
 * may start from and the state it leads to (contract.md#spec-3, contract.md#d15, contract.md#d18).
 *
 * How a flow changes a member: inside one transaction it reads the row with its lock
 * (`findMemberById(…, { lock: true })`: FOR UPDATE on PostgreSQL; SQLite runs one writer at a
 * time), decides from that row with `nextStatus`, and writes with a conditional update from the
 * state it read. A decision taken before the transaction (a password checked against a hash) is
 * checked again against the locked row and, if the row moved, taken again on the fresh row. The
 * member row is always the first row a transaction locks, so two flows never wait on each other
 * in opposite orders.
 */
import { MemberStatus, type Member } from "../../model.js";
import type { Store } from "../../store/index.js";

const { pending, unlocked, locked, passwordChangePending } = MemberStatus;
const anyStatus: readonly MemberStatus[] = [pending, unlocked, locked, passwordChangePending];

export type StatusAction = "verifyEmail" | "resetPassword" | "changePassword" | "lock" | "unlock" | "requirePasswordChange" | "secureAccount";

interface Transition {
  from: readonly MemberStatus[];
  to: (member: Member) => MemberStatus;
}

export const statusTransitions: Record<StatusAction, Transition> = {
  /** A verification link activates a pending account only: it can't rewrite an active one (contract.md#d18). */
  verifyEmail: { from: [pending], to: () => unlocked },
  /** contract.md#spec-3: any state. A lock voids every link and no link is issued to a locked account (contract.md#d15). */
  resetPassword: { from: anyStatus, to: () => unlocked },
  /** Needs a live session, which neither a pending nor a locked account has. */
  changePassword: { from: [unlocked, passwordChangePending], to: () => unlocked },
  lock: { from: anyStatus, to: () => locked },
  /** contract.md#d15: back to where the email says; unlocking an account that isn't locked changes nothing. */
  unlock: { from: [locked], to: (member) => (member.emailVerified ? unlocked : pending) },
  /** contract.md#d15: only an active account; a locked or unverified one keeps its state. */
  requirePasswordChange: { from: [unlocked, passwordChangePending], to: () => passwordChangePending },
  /** contract.md#d24 "this wasn't me": like requirePasswordChange, asked by the member from an alert's link. */
  secureAccount: { from: [unlocked, passwordChangePending], to: () => passwordChangePending },
};

/** The status `action` leads to from the member's current one, or undefined when it may not start there. */
export function nextStatus(action: StatusAction, member: Member): MemberStatus | undefined {
  const transition = statusTransitions[action];
  return transition.from.includes(member.status) ? transition.to(member) : undefined;
}

/**
 * Writes `to` as a conditional update from the status of `member`, a row read with its lock in
 * this transaction: it can't lose, so a loss means the lock was not taken and is a bug, not a retry.
 */
export async function changeStatus(tx: Store, member: Member, to: MemberStatus, now: number): Promise<void> {
  if (to === member.status) return;
  if (!(await tx.members.updateStatus(member.tenantId, member.recordId, member.status, to, now))) {
    throw new Error("member status changed under its row lock");
  }
}
