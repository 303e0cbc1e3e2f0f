/** Sources with several audio, subtitle and chapter tracks, made with ffmpeg for the tests that play them. */
import fs from 'node:fs';
import path from 'node:path';
import { run } from '../../server/media/ffmpegRunner.js';

/**
 * A 640x360 H.264 Matroska file (copied as the first rendition) with two audio tracks told apart
 * by pitch: English at 440 Hz, French at 880 Hz, the second titled as a film's dub is (an MP4's
 * track has no title ffmpeg writes); two SubRip subtitle streams, English and German (titled);
 * and two chapters.
 */
export async function twoLanguages(dir: string, seconds: number): Promise<string> {
  const file = path.join(dir, 'two-languages.mkv');
  const en = path.join(dir, 'en.srt');
  fs.writeFileSync(en, '1\n00:00:01,000 --> 00:00:02,500\nHello\n\n2\n00:00:05,000 --> 00:00:06,000\nGoodbye\n');
  const de = path.join(dir, 'de.srt');
  fs.writeFileSync(de, '1\n00:00:01,000 --> 00:00:02,500\nHallo\n');
  const chapters = path.join(dir, 'chapters.txt');
  fs.writeFileSync(chapters, `;FFMETADATA1\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=0\nEND=4000\ntitle=Opening\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=4000\nEND=${seconds * 1000}\ntitle=Ending\n`);
  await run([
    '-f', 'lavfi', '-i', `testsrc2=s=640x360:r=30:d=${seconds}`,
    '-f', 'lavfi', '-i', `sine=f=440:sample_rate=48000:d=${seconds}`,
    '-f', 'lavfi', '-i', `sine=f=880:sample_rate=48000:d=${seconds}`,
    '-i', en, '-i', de, '-f', 'ffmetadata', '-i', chapters,
    '-map', '0:v', '-map', '1:a', '-map', '2:a', '-map', '3:s', '-map', '4:s', '-map_chapters', '5',
    '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-g', '30',
    '-c:a', 'aac', '-b:a', '64k', '-c:s', 'srt',
    '-metadata:s:a:0', 'language=eng',
    '-metadata:s:a:1', 'language=fre', '-metadata:s:a:1', 'title=Français (doublage)',
    '-metadata:s:s:0', 'language=eng',
    '-metadata:s:s:1', 'language=ger', '-metadata:s:s:1', 'title=Deutsch',
    '-f', 'matroska', '-y', file,
  ]);
  return file;
}
