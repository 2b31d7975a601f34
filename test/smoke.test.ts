import { generateText } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import twilio from 'twilio';
import mongoose from 'mongoose';
import { Queue } from 'bullmq';
test('imports', () => { expect(typeof generateText).toBe('function'); expect(typeof createOpenAI).toBe('function'); expect(typeof twilio.validateRequest).toBe('function'); expect(mongoose).toBeDefined(); expect(Queue).toBeDefined(); });
