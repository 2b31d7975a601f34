/**
 * The notice ledger: one document per hand-off and destination (`<hand-off>|<destination>`),
 * pending → sending → sent once, or failed (a lost outcome is looked up, then claimed again), or
 * pending → withdrawn (a notice held for the team's opening whose hand-off was taken or ended).
 */
import { noticeId, type HandoffModels, type NoticeRecord, type HandoffStore } from './handoff-records.js';

type NoticeLedger = Pick<HandoffStore, 'notice' | 'claimNotice' | 'reclaimNotice' | 'markNoticeSent' | 'releaseNotice' | 'markNoticeFailed' | 'withdrawNotice'>;

export function createNoticeLedger({ notices }: HandoffModels, now: () => number): NoticeLedger {
  return {
    async notice(handoffId, destinationId) {
      return (await notices.findById(noticeId(handoffId, destinationId)).lean<NoticeRecord>().exec()) ?? undefined;
    },

    async claimNotice(id) {
      const claimed = await notices
        .findOneAndUpdate({ _id: id, status: 'pending' }, { $set: { status: 'sending', claimedAt: new Date(now()) }, $inc: { attempts: 1 } })
        .exec();
      return claimed !== null;
    },

    async reclaimNotice(id) {
      await notices.updateOne({ _id: id }, { $set: { status: 'sending', claimedAt: new Date(now()) }, $inc: { attempts: 1 } }).exec();
    },

    async markNoticeSent(id, channelMessageId) {
      await notices.updateOne({ _id: id }, { $set: { status: 'sent', sentAt: new Date(now()), ...(channelMessageId ? { channelMessageId } : {}) } }).exec();
    },

    async releaseNotice(id, error) {
      await notices.updateOne({ _id: id, status: 'sending' }, { $set: { status: 'pending', lastError: error } }).exec();
    },

    async markNoticeFailed(id, status, error) {
      await notices.updateOne({ _id: id }, { $set: { status, lastError: error } }).exec();
    },

    async withdrawNotice(id, reason) {
      const withdrawn = await notices.findOneAndUpdate({ _id: id, status: 'pending' }, { $set: { status: 'withdrawn', lastError: reason } }).exec();
      return withdrawn !== null;
    },
  };
}
